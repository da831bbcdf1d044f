"""The embedded S3-compatible server (`zync up --s3`): S3Proxy, an HTTP server speaking S3, over a
folder of the state folder, on loopback, with credentials of its own.

It is a real server process, for trying the warehouse on object storage on one machine and for the
tests: Spark reaches it through Hadoop's S3A, Python through Arrow's S3 client, as they reach AWS
S3. What it honours, and what the project relies on (docs/object-storage.md):
- PUT (one upload, whole or absent), GET, HEAD, DELETE, LIST (v1 and v2, with delimiters), COPY and
  multipart uploads, with AWS signatures (v2 and v4);
- not conditional writes: a PUT with `If-None-Match: *` replaces an object that exists. Delta's
  commits do not rely on them (jvm/delta-commits claims each commit in the catalog's database).

Its credentials are made at the first start and kept in <state>/s3/credentials, in the AWS
credentials file format, readable by the owner only: clients read it as any AWS credentials file
($AWS_SHARED_CREDENTIALS_FILE), so no secret passes through a setting, a command line or a log.
"""

from __future__ import annotations

import configparser
import os
import secrets
import socket
from pathlib import Path

from stack.processes import Service, java
from zync.config import local_dir, state_dir
from zync.errors import ZyncError

NAME = "s3"
LOOPBACK = "127.0.0.1"
DEFAULT_PORT = 19000
PORT_ENV = "ZYNC_S3_PORT"
# The bucket made at start: the warehouse of the embedded setup is s3a://zync/warehouse.
BUCKET = "zync"
PROFILE = "default"
# S3Proxy's own log level (its requests are logged at DEBUG), for counting what a workload asks of the store.
LOG_LEVEL_ENV = "ZYNC_S3_LOG_LEVEL"
LOG_LEVELS = ("ERROR", "WARN", "INFO", "DEBUG", "TRACE")


def port() -> int:
    return int(os.environ.get(PORT_ENV, str(DEFAULT_PORT)))


def folder() -> Path:
    return state_dir() / NAME


def endpoint() -> str:
    return f"http://{LOOPBACK}:{port()}"


def credentials_file() -> Path:
    return folder() / "credentials"


def warehouse() -> str:
    return f"s3a://{BUCKET}/warehouse"


def environment() -> dict[str, str]:
    """The environment that points the project's Spark and Python at this server's warehouse.

    The credentials file is named twice: AWS_SHARED_CREDENTIALS_FILE is what the AWS CLI and Arrow's
    S3 client (the C++ SDK) read, AWS_CREDENTIAL_PROFILES_FILE what the Java SDK 1.x under Hadoop
    3.3's S3A reads.
    """
    return {"ZYNC_WAREHOUSE": warehouse(), "ZYNC_S3_ENDPOINT": endpoint(),
            "AWS_SHARED_CREDENTIALS_FILE": str(credentials_file()),
            "AWS_CREDENTIAL_PROFILES_FILE": str(credentials_file())}


def exports() -> str:
    """environment() as a shell line."""
    return "export " + " ".join(f"{name}={value}" for name, value in environment().items())


def _private_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as out:
        out.write(text)


def _credentials() -> tuple[str, str]:
    """The server's access key and secret, made on first use."""
    path = credentials_file()
    if not path.exists():
        parser = configparser.ConfigParser()
        parser[PROFILE] = {"aws_access_key_id": "zync" + secrets.token_hex(8),
                           "aws_secret_access_key": secrets.token_urlsafe(30)}
        lines = [f"[{PROFILE}]", *(f"{k} = {v}" for k, v in parser[PROFILE].items()), ""]
        _private_write(path, "\n".join(lines))
    parser = configparser.ConfigParser()
    parser.read(path)
    try:
        return parser[PROFILE]["aws_access_key_id"], parser[PROFILE]["aws_secret_access_key"]
    except KeyError:
        raise ZyncError(f"{path} has no [{PROFILE}] aws_access_key_id and aws_secret_access_key; "
                        "remove it and run `zync up --s3` again to make new ones") from None


def _jars() -> Path:
    return local_dir() / "jars" / "s3proxy"


def _prepare() -> None:
    if not any(_jars().glob("s3proxy-*.jar")):
        raise ZyncError(f"S3Proxy is not installed under {_jars()}: run `make setup`")
    identity, credential = _credentials()
    data = folder() / "data"
    data.mkdir(parents=True, exist_ok=True)
    _private_write(folder() / "s3proxy.conf", "\n".join([
        f"s3proxy.endpoint={endpoint()}",
        "s3proxy.authorization=aws-v2-or-v4",
        f"s3proxy.identity={identity}",
        f"s3proxy.credential={credential}",
        # The NIO.2 filesystem store: objects are files, folders are not objects (the older
        # `filesystem` store lists folders as objects, which S3A takes for files).
        "jclouds.provider=filesystem-nio2",
        # The store's own login, which S3Proxy requires and nothing else uses (local files).
        "jclouds.identity=local",
        "jclouds.credential=local",
        f"jclouds.filesystem.basedir={data}",
        "",
    ]))
    # S3Proxy logs every request at DEBUG without a configuration of its own: WARN unless asked.
    level = os.environ.get(LOG_LEVEL_ENV, "WARN").upper()
    if level not in LOG_LEVELS:
        raise ZyncError(f"{LOG_LEVEL_ENV}={level!r} is not a log level: use one of {', '.join(LOG_LEVELS)}")
    (folder() / "logback.xml").write_text(
        "<configuration>\n"
        "  <appender name=\"file\" class=\"ch.qos.logback.core.FileAppender\">\n"
        f"    <file>{folder() / 's3.log'}</file>\n"
        "    <encoder><pattern>%d %level %logger{20} %msg%n</pattern></encoder>\n"
        "  </appender>\n"
        f"  <logger name=\"org.gaul.s3proxy\" level=\"{level}\"/>\n"
        "  <root level=\"WARN\"><appender-ref ref=\"file\"/></root>\n"
        "</configuration>\n")


def _answers() -> bool:
    try:
        with socket.create_connection((LOOPBACK, port()), timeout=2) as connection:
            connection.sendall(b"GET / HTTP/1.0\r\n\r\n")
            return connection.recv(12).startswith(b"HTTP/1.")
    except OSError:
        return False


def ensure_bucket() -> None:
    """The warehouse's bucket, made through the S3 API if missing."""
    import pyarrow.fs as pafs

    options = dict(zip(("access_key", "secret_key"), _credentials()))
    store = pafs.S3FileSystem(endpoint_override=f"{LOOPBACK}:{port()}", scheme="http", region="us-east-1",
                              allow_bucket_creation=True, **options)
    if store.get_file_info(BUCKET).type == pafs.FileType.NotFound:
        store.create_dir(BUCKET)


def service() -> Service:
    return Service(
        name=NAME,
        port=port(),
        command=[
            java(),
            "-Xmx256m", f"-Dlogback.configurationFile={folder() / 'logback.xml'}",
            "-cp", str(_jars() / "*"), "org.gaul.s3proxy.Main", "--properties", str(folder() / "s3proxy.conf"),
        ],
        cwd=folder(),
        prepare=_prepare,
        ready=_answers,
        env_var=PORT_ENV,
        data=folder() / "data",
    )
