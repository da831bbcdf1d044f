"""Where a table's files are, for the Python paths that read or write them without Spark: a local
folder (`file:` or a plain path) or an object store (`s3a://`, `s3://`: S3 or an S3-compatible one).

Spark reaches an object store through Hadoop's S3A (profiles/profiles.yml); Python through Arrow's S3
file system, set from the same settings so that both see one store:
- the endpoint: $ZYNC_S3_ENDPOINT (`http://host:port` for an S3-compatible store, unset for AWS);
- the credentials: the AWS SDK's own chain, which both follow: $AWS_ACCESS_KEY_ID and
  $AWS_SECRET_ACCESS_KEY, or a credentials file ($AWS_SHARED_CREDENTIALS_FILE, $AWS_PROFILE), or the
  machine's role. None of them is ever read into a setting, a log line or an error here.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from urllib.parse import unquote, urlparse

import pyarrow.fs as pafs

from zync.errors import ZyncError

ENDPOINT_ENV = "ZYNC_S3_ENDPOINT"
REGION_ENV = "AWS_REGION"
OBJECT_STORE_SCHEMES = ("s3a", "s3", "s3n")
# Arrow's S3 client asks AWS for a bucket's region when none is given; an S3-compatible store has one.
DEFAULT_REGION = "us-east-1"


def is_object_store(uri: str) -> bool:
    return urlparse(uri).scheme in OBJECT_STORE_SCHEMES


def is_local(uri: str) -> bool:
    return urlparse(uri).scheme in ("", "file")


@cache
def _s3(endpoint: str, region: str) -> pafs.S3FileSystem:
    # A delayed open lets a small file go up in one PUT when its stream closes: an open stream
    # otherwise starts a multipart upload, three requests for the few kilobytes of an append's file
    # (docs/object-storage.md, Measured). A missing bucket is then reported at close, not at open.
    options: dict = {"region": region, "allow_delayed_open": True}
    if endpoint:
        parsed = urlparse(endpoint if "://" in endpoint else f"https://{endpoint}")
        if not parsed.hostname:
            raise ZyncError(f"${ENDPOINT_ENV} is {endpoint!r}, not an address: set it as http://HOST:PORT "
                            "(or unset it for AWS S3)")
        options.update(endpoint_override=parsed.netloc, scheme=parsed.scheme or "https",
                       force_virtual_addressing=False)
    return pafs.S3FileSystem(**options)


def s3_filesystem() -> pafs.S3FileSystem:
    """Arrow's S3 file system for the configured endpoint (one a process and endpoint)."""
    return _s3(os.environ.get(ENDPOINT_ENV, "").strip(), os.environ.get(REGION_ENV, "").strip() or DEFAULT_REGION)


@dataclass(frozen=True)
class Entry:
    """A file of a folder: its name, size and modification time in milliseconds (as Hadoop gives it Delta)."""

    name: str
    size: int
    mtime_ms: int


@dataclass(frozen=True)
class Location:
    """A folder or file of a table, in its file system's terms."""

    uri: str
    filesystem: pafs.FileSystem
    path: str

    def child(self, *names: str) -> Location:
        joined = "/".join([self.path.rstrip("/"), *names])
        return Location(self.uri.rstrip("/") + "/" + "/".join(names), self.filesystem, joined)

    @property
    def local_path(self) -> Path | None:
        return Path(self.path) if isinstance(self.filesystem, pafs.LocalFileSystem) else None

    def read_bytes(self) -> bytes:
        """The file's bytes; FileNotFoundError when it is not there."""
        with self.filesystem.open_input_stream(self.path) as stream:
            return stream.read()

    def read_head(self, size: int) -> bytes:
        """The file's first `size` bytes (all of a shorter file): on an object store, a ranged GET."""
        with self.filesystem.open_input_file(self.path) as stream:
            return stream.read(size)

    def read_text(self) -> str:
        return self.read_bytes().decode("utf-8")

    def write_bytes(self, content: bytes) -> None:
        """One upload (an object store shows it whole or not at all)."""
        with self.filesystem.open_output_stream(self.path) as stream:
            stream.write(content)

    def exists(self) -> bool:
        return self.filesystem.get_file_info(self.path).type != pafs.FileType.NotFound

    def entries(self) -> Iterator[Entry]:
        """The files directly in this folder (none when it is not there)."""
        selector = pafs.FileSelector(self.path, allow_not_found=True, recursive=False)
        for info in self.filesystem.get_file_info(selector):
            if info.type == pafs.FileType.File:
                yield Entry(info.base_name, int(info.size or 0), int(info.mtime_ns or 0) // 1_000_000)

    def has_any(self) -> bool:
        """Whether the folder holds anything (False when it is not there)."""
        selector = pafs.FileSelector(self.path, allow_not_found=True, recursive=True)
        return any(True for _ in self.filesystem.get_file_info(selector))


def location(uri: str) -> Location:
    """The folder or file a table location names (as Spark writes it: `file:/...`, `s3a://bucket/key`)."""
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        return Location(uri, pafs.LocalFileSystem(), unquote(parsed.path) if parsed.scheme else uri)
    if parsed.scheme in OBJECT_STORE_SCHEMES:
        if not parsed.netloc:
            raise ZyncError(f"{uri} names no bucket: write it as s3a://BUCKET/PREFIX")
        return Location(uri, s3_filesystem(), f"{parsed.netloc}{unquote(parsed.path)}".rstrip("/"))
    raise ZyncError(f"{uri}: zync reads tables on local folders and S3 (s3a://), not {parsed.scheme}:")



def _profile_credentials() -> dict[str, str]:
    """The access key and secret of the AWS credentials file's profile ($AWS_SHARED_CREDENTIALS_FILE or
    ~/.aws/credentials, $AWS_PROFILE or default), when one is there: for delta-rs, which reads keys
    from the environment only."""
    import configparser

    path = Path(os.environ.get("AWS_SHARED_CREDENTIALS_FILE") or Path.home() / ".aws" / "credentials")
    parser = configparser.ConfigParser()
    try:
        parser.read(path)
        section = parser[os.environ.get("AWS_PROFILE") or "default"]
        return {"AWS_ACCESS_KEY_ID": section["aws_access_key_id"],
                "AWS_SECRET_ACCESS_KEY": section["aws_secret_access_key"]}
    except (KeyError, OSError, configparser.Error):
        return {}


def managed_table_uri(warehouse: str | os.PathLike[str], database: str, table: str) -> str:
    """Where the catalog keeps managed table `database.table` of a warehouse (a folder or an object store)."""
    return f"{os.fspath(warehouse).rstrip('/')}/{database}.db/{table}"


def delta_rs_table(uri: str) -> tuple[str, dict[str, str]]:
    """The URI and storage options delta-rs (`deltalake`) opens a table at `uri` with: the same
    store, endpoint and credentials as Spark's and Arrow's."""
    parsed = urlparse(uri)
    if parsed.scheme not in OBJECT_STORE_SCHEMES:
        return (unquote(parsed.path) if parsed.scheme == "file" else uri), {}
    options = {"AWS_REGION": os.environ.get(REGION_ENV, "").strip() or DEFAULT_REGION}
    endpoint = os.environ.get(ENDPOINT_ENV, "").strip()
    if endpoint:
        options.update(AWS_ENDPOINT_URL=endpoint, AWS_ALLOW_HTTP="true", AWS_VIRTUAL_HOSTED_STYLE_REQUEST="false")
    if not os.environ.get("AWS_ACCESS_KEY_ID"):
        options.update(_profile_credentials())
    return f"s3://{parsed.netloc}{parsed.path}", options
