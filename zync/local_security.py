"""TLS material and SASL credentials for the embedded broker's secured listeners.

At first `zync up`, openssl makes a private CA, a broker certificate for
127.0.0.1/localhost and a client certificate, under <state>/kafka/security/,
and a random password for the SASL user `zync` (SCRAM-SHA-512 and PLAIN).
They never leave the state folder; the secured targets in profiles/zync.yml
point at the CA file and take the password from $ZYNC_KAFKA_PASSWORD.
"""

from __future__ import annotations

import secrets
import shutil
import subprocess
from pathlib import Path

from zync.errors import ZyncError

SASL_USER = "zync"
DAYS = "3650"


def security_dir(kafka_folder: Path) -> Path:
    return kafka_folder / "security"


def sasl_password(kafka_folder: Path) -> str:
    """The embedded broker's SASL password for user `zync` (made at first `zync up`)."""
    path = security_dir(kafka_folder) / "sasl-password"
    if not path.is_file():
        raise ZyncError(f"{path} is missing: start the embedded services once with `zync up`")
    return path.read_text().strip()


def _openssl(*args: str, cwd: Path) -> None:
    if shutil.which("openssl") is None:
        raise ZyncError("openssl is needed to make the embedded broker's TLS certificates: install it "
                        "(apt-get install openssl) and run `zync up` again")
    result = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        raise ZyncError(f"openssl {args[0]} failed in {cwd}: {result.stderr.strip()[-400:]}")


def _signed(cwd: Path, name: str, subject: str, extensions: str) -> None:
    _openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", f"{name}-key.pem", cwd=cwd)
    _openssl("req", "-new", "-key", f"{name}-key.pem", "-subj", subject, "-out", f"{name}.csr", cwd=cwd)
    (cwd / f"{name}.ext").write_text(extensions)
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem", "-CAcreateserial",
             "-days", DAYS, "-sha256", "-extfile", f"{name}.ext", "-out", f"{name}.pem", cwd=cwd)


def ensure_material(kafka_folder: Path) -> bool:
    """Make the CA, certificates and password once; True if they were made now."""
    folder = security_dir(kafka_folder)
    done = folder / "sasl-password"
    if done.is_file():
        return False
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca-key.pem", "-out", "ca.pem",
             "-days", DAYS, "-subj", "/CN=zync embedded broker CA", cwd=folder)
    _signed(folder, "broker", "/CN=localhost", "subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    _signed(folder, "client", "/CN=zync-client", "extendedKeyUsage=clientAuth\n")
    # Kafka's PEM keystore: the PKCS#8 key, then the certificate chain, in one file.
    (folder / "broker-keystore.pem").write_text(
        (folder / "broker-key.pem").read_text() + (folder / "broker.pem").read_text() + (folder / "ca.pem").read_text())
    password = secrets.token_urlsafe(18)
    done.write_text(password + "\n")
    done.chmod(0o600)
    return True


def listener_properties(kafka_folder: Path, sasl_port: int, tls_port: int) -> list[str]:
    """server.properties lines for SASL_SSL (SCRAM-SHA-512, PLAIN) and SSL with client certificates."""
    folder = security_dir(kafka_folder)
    password = sasl_password(kafka_folder)
    return [
        "ssl.keystore.type=PEM",
        f"ssl.keystore.location={folder / 'broker-keystore.pem'}",
        "ssl.truststore.type=PEM",
        f"ssl.truststore.location={folder / 'ca.pem'}",
        "listener.name.ssl.ssl.client.auth=required",
        "listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-512,PLAIN",
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config="
        "org.apache.kafka.common.security.scram.ScramLoginModule required;",
        "listener.name.sasl_ssl.plain.sasl.jaas.config="
        f'org.apache.kafka.common.security.plain.PlainLoginModule required user_{SASL_USER}="{password}";',
    ]


def scram_format_args(kafka_folder: Path) -> list[str]:
    """kafka-storage format arguments creating the SCRAM user with the cluster's first metadata."""
    return ["--add-scram", f"SCRAM-SHA-512=[name={SASL_USER},password={sasl_password(kafka_folder)}]"]
