"""TLS material and SASL credentials for the embedded broker's secured listeners.

At first `zync up`, a private CA, a broker certificate for 127.0.0.1/localhost
and a client certificate are made (with `cryptography`, so no openssl binary is
needed) under <state>/kafka/security/, with a random password for the SASL user
`zync` (SCRAM-SHA-512 and PLAIN). They never leave the state folder; the
secured targets in profiles/zync.yml point at the CA file and take the password
from $ZYNC_KAFKA_PASSWORD.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import secrets
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from zync.errors import ZyncError

SASL_USER = "zync"
VALID_FOR = dt.timedelta(days=3650)


def security_dir(kafka_folder: Path) -> Path:
    return kafka_folder / "security"


def sasl_password(kafka_folder: Path) -> str:
    """The embedded broker's SASL password for user `zync` (made at first `zync up`)."""
    path = security_dir(kafka_folder) / "sasl-password"
    if not path.is_file():
        raise ZyncError(f"{path} is missing: start the embedded services once with `zync up`")
    return path.read_text().strip()


def _key_pem(key: rsa.RSAPrivateKey) -> bytes:
    # Kafka's PEM keystore reads unencrypted PKCS#8 keys only.
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _certificate(subject: str, key: rsa.RSAPrivateKey, issuer: x509.Name, issuer_key: rsa.RSAPrivateKey,
                 extensions: list[tuple[x509.ExtensionType, bool]]) -> x509.Certificate:
    now = dt.datetime.now(dt.timezone.utc)
    builder = (x509.CertificateBuilder()
               .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
               .issuer_name(issuer)
               .public_key(key.public_key())
               .serial_number(x509.random_serial_number())
               .not_valid_before(now - dt.timedelta(minutes=5))
               .not_valid_after(now + VALID_FOR))
    for extension, critical in extensions:
        builder = builder.add_extension(extension, critical=critical)
    return builder.sign(issuer_key, hashes.SHA256())


def _write(path: Path, data: bytes, private: bool = False) -> None:
    path.write_bytes(data)
    if private:
        path.chmod(0o600)


def ensure_material(kafka_folder: Path) -> bool:
    """Make the CA, certificates and password once; True if they were made now."""
    folder = security_dir(kafka_folder)
    done = folder / "sasl-password"
    if done.is_file():
        return False
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)

    ca_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "zync embedded broker CA")])
    ca = _certificate("zync embedded broker CA", ca_key, ca_name, ca_key, [
        (x509.BasicConstraints(ca=True, path_length=None), True),
        (x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                       key_encipherment=False, data_encipherment=False, key_agreement=False,
                       encipher_only=False, decipher_only=False), True),
        (x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False),
    ])
    ca_pem = ca.public_bytes(serialization.Encoding.PEM)
    _write(folder / "ca.pem", ca_pem)
    _write(folder / "ca-key.pem", _key_pem(ca_key), private=True)

    leaves = {
        "broker": ("localhost", [(x509.SubjectAlternativeName(
            [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]), False)]),
        "client": ("zync-client", [(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), False)]),
    }
    for name, (subject, extensions) in leaves.items():
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        certificate = _certificate(subject, key, ca.subject, ca_key, [
            *extensions,
            (x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False),
        ])
        _write(folder / f"{name}-key.pem", _key_pem(key), private=True)
        _write(folder / f"{name}.pem", certificate.public_bytes(serialization.Encoding.PEM))
    # Kafka's PEM keystore: the PKCS#8 key, then the certificate chain, in one file.
    _write(folder / "broker-keystore.pem",
           (folder / "broker-key.pem").read_bytes() + (folder / "broker.pem").read_bytes() + ca_pem, private=True)
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
