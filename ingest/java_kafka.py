"""A target's librdkafka settings as options of Spark's Kafka source (the Java client).

Profiles hold librdkafka properties (profiles/zync.yml), which the Python
clients take as they are. When Spark reads Kafka itself (ingest/spark_job.py)
the same connection must be described to the Java client, whose names differ:
SASL credentials become a JAAS line, PEM files become PEM stores.

A setting with no Java equivalent known here raises `NoJavaEquivalent`
rather than being dropped: ingest then reads with the Python consumer, which
takes the profile as it is, and says why.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

# Same name, same meaning in librdkafka and the Java client.
_SAME = ("bootstrap.servers", "security.protocol", "client.id", "ssl.key.password",
         "request.timeout.ms", "socket.connection.setup.timeout.ms", "metadata.max.age.ms")
_LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}
_SASL_KEYS = ("sasl.mechanism", "sasl.mechanisms", "sasl.username", "sasl.password")
_TLS_FILE_KEYS = ("ssl.ca.location", "ssl.certificate.location", "ssl.key.location")


class NoJavaEquivalent(ValueError):
    """A profile setting Spark's Kafka source cannot be given; the message names it."""


def _jaas_quoted(text: str) -> str:
    # Kafka parses JAAS values with java.io.StreamTokenizer: backslash escapes inside quotes.
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _sasl(settings: dict[str, Any]) -> dict[str, str]:
    mechanism = str(settings.get("sasl.mechanism") or settings.get("sasl.mechanisms") or "GSSAPI").upper()
    module = _LOGIN_MODULES.get(mechanism)
    if module is None:
        raise NoJavaEquivalent(f"sasl.mechanism {mechanism} (Spark's reader knows {', '.join(_LOGIN_MODULES)})")
    username, password = settings.get("sasl.username"), settings.get("sasl.password")
    if username is None or password is None:
        raise NoJavaEquivalent(f"sasl.mechanism {mechanism} without sasl.username and sasl.password")
    return {"sasl.mechanism": mechanism,
            "sasl.jaas.config": f"{module} required username={_jaas_quoted(str(username))} "
                                f"password={_jaas_quoted(str(password))};"}


def _pem(path: Any, what: str) -> str:
    try:
        return Path(str(path)).read_text()
    except OSError as e:
        raise NoJavaEquivalent(f"{what} {path} is not readable ({e.strerror})") from None


def _tls(settings: dict[str, Any]) -> dict[str, str]:
    options: dict[str, str] = {}
    if settings.get("ssl.ca.location"):
        options["ssl.truststore.type"] = "PEM"
        options["ssl.truststore.certificates"] = _pem(settings["ssl.ca.location"], "ssl.ca.location")
    certificate, key = settings.get("ssl.certificate.location"), settings.get("ssl.key.location")
    if bool(certificate) != bool(key):
        raise NoJavaEquivalent("a client certificate needs both ssl.certificate.location and ssl.key.location")
    if certificate:
        # The Java client reads a PEM key store from strings: the chain and a PKCS#8 key.
        options["ssl.keystore.type"] = "PEM"
        options["ssl.keystore.certificate.chain"] = _pem(certificate, "ssl.certificate.location")
        options["ssl.keystore.key"] = _pem(key, "ssl.key.location")
    algorithm = settings.get("ssl.endpoint.identification.algorithm")
    if algorithm is not None:
        # librdkafka says "none" where the Java client wants an empty string.
        options["ssl.endpoint.identification.algorithm"] = "" if str(algorithm).lower() == "none" else str(algorithm)
    return options


def java_kafka_options(settings: dict[str, Any]) -> dict[str, str]:
    """Options for `spark.read.format("kafka")`, each prefixed `kafka.` as Spark's source wants them."""
    known = set(_SAME) | set(_SASL_KEYS) | set(_TLS_FILE_KEYS) | {"ssl.endpoint.identification.algorithm"}
    unknown = sorted(k for k in settings if k not in known)
    if unknown:
        raise NoJavaEquivalent(f"librdkafka setting(s) {', '.join(unknown)}")
    options = {k: str(settings[k]) for k in _SAME if k in settings}
    protocol = str(settings.get("security.protocol", "PLAINTEXT")).upper()
    options["security.protocol"] = protocol
    if protocol.startswith("SASL"):
        options.update(_sasl(settings))
    if protocol in ("SSL", "SASL_SSL"):
        options.update(_tls(settings))
    return {f"kafka.{k}": v for k, v in options.items()}
