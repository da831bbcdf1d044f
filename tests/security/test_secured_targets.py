"""SASL over TLS, TLS client certificates and zync's $HOME files, on the embedded broker's secured listeners.

`zync up` gives the one test broker a SASL_SSL listener (SCRAM-SHA-512 and
PLAIN, TLS with its own CA) and an SSL listener that requires a client
certificate, beside the default PLAINTEXT one; the targets local-sasl,
local-mtls and zync-home of profiles/zync.yml reach them.
"""

from __future__ import annotations

import json

import pytest

from cli import main as cli
from stack import local_security, services
from zync import kafka_client, topics
from zync.config import load_target, state_dir
from zync.errors import ZyncError

WRONG_PASSWORD = "Wr0ng-pa55word-never-shown"


@pytest.fixture
def sasl_env(target, monkeypatch):
    password = local_security.sasl_password(state_dir() / "kafka")
    monkeypatch.setenv("ZYNC_KAFKA_PASSWORD", password)
    load_target.cache_clear()
    yield password
    load_target.cache_clear()


def _round_trip(target, topic: str) -> list[dict]:
    records = [{"key": {"id": 1}, "value": {"id": 1, "secret": "over TLS"}},
               {"key": {"id": 2}, "value": None}]
    assert topics.produce(target, topic, records) == 2
    return [{"key": r["key"], "value": r["value"]} for r in topics.consume(target, topic, from_beginning=True, max_records=2)]


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "PLAIN"])
def test_produce_and_consume_over_sasl_ssl(sasl_env, monkeypatch, mechanism):
    monkeypatch.setenv("ZYNC_KAFKA_SASL_MECHANISM", mechanism)
    secure = load_target("local-sasl")
    assert secure.kafka["security.protocol"] == "SASL_SSL"
    assert secure.kafka["bootstrap.servers"].endswith(f":{services.secured_ports(int(load_target('local').kafka['bootstrap.servers'].rsplit(':', 1)[1]))[0]}")
    topic = f"security_sasl_{mechanism.replace('-', '_').lower()}"
    assert _round_trip(secure, topic) == [{"key": {"id": 1}, "value": {"id": 1, "secret": "over TLS"}},
                                          {"key": {"id": 2}, "value": None}]


def test_a_client_certificate_opens_the_tls_listener(target):
    secure = load_target("local-mtls")
    assert _round_trip(secure, "security_mtls") [0]["value"] == {"id": 1, "secret": "over TLS"}


@pytest.mark.parametrize("name", ["local-sasl", "local-mtls"])
def test_spark_reads_kafka_over_sasl_ssl_and_with_a_client_certificate(sasl_env, spark, name):
    from ingest.from_kafka import Ingest
    from ingest.from_kafka import ingest_progress

    secure = load_target(name)
    topic = f"security_ingest_{name.replace('-', '_')}"
    assert _round_trip(secure, topic)[1]["value"] is None
    job = Ingest(secure, [topic], progress=ingest_progress(live=False))
    assert job.run(exit_after=0.0) == 2
    # Spark's own Kafka client read the batch: the profile's SASL and TLS settings reached it.
    assert job.batches_read == {"spark": 1, "consumer": 0}
    rows = spark.sql(f"select key.id as id, value.secret as secret from zync.raw_{topic} order by kafka.offset").collect()
    assert [tuple(r) for r in rows] == [(1, "over TLS"), (2, None)]


def test_the_tls_listener_refuses_a_client_without_certificate(target):
    secure = load_target("local-mtls")
    bare = type(secure)(secure.name, secure.dbt_output,
                        {k: v for k, v in secure.kafka.items() if not k.startswith(("ssl.certificate", "ssl.key"))},
                        secure.schema_registry)
    with pytest.raises(ZyncError, match="cannot (connect to|reach) Kafka"):
        kafka_client.partitions(bare, "security_mtls")


def test_a_wrong_password_fails_fast_and_is_never_printed(target, monkeypatch, capsys):
    monkeypatch.setenv("ZYNC_KAFKA_PASSWORD", WRONG_PASSWORD)
    load_target.cache_clear()
    try:
        assert cli.main(["consume", "--target", "local-sasl", "--topic", "security_any", "--exit-after", "1s"]) == 1
        err = capsys.readouterr().err
        assert "authentication" in err.lower() and "local-sasl" in err
        assert WRONG_PASSWORD not in err
        assert WRONG_PASSWORD not in repr(load_target("local-sasl"))
    finally:
        load_target.cache_clear()


def test_an_unset_password_variable_is_named(target, monkeypatch):
    monkeypatch.delenv("ZYNC_KAFKA_PASSWORD", raising=False)
    load_target.cache_clear()
    try:
        with pytest.raises(ZyncError, match="needs environment variable ZYNC_KAFKA_PASSWORD"):
            load_target("local-sasl")
    finally:
        load_target.cache_clear()


def test_zync_home_files_are_honoured(sasl_env, monkeypatch, tmp_path):
    local = load_target("local")
    sasl_port, _ = services.secured_ports(int(local.kafka["bootstrap.servers"].rsplit(":", 1)[1]))
    home = tmp_path / "home"
    (home / ".zync").mkdir(parents=True)
    # zync's own file format (its README and Connection Guide).
    (home / ".zync" / "kafka.json").write_text(json.dumps({
        "bootstrap_servers": f"127.0.0.1:{sasl_port}", "security_protocol": "SASL_SSL",
        "sasl_mechanisms": "PLAIN", "sasl_username": "zync", "sasl_password": sasl_env,
        "tls_server_ca_cert_file": str(state_dir() / "kafka" / "security" / "ca.pem")}))
    (home / ".zync" / "schema_registry.json").write_text(json.dumps({"url": local.schema_registry["url"]}))
    monkeypatch.setenv("HOME", str(home))
    load_target.cache_clear()
    from_home = load_target("zync-home")
    assert from_home.kafka["bootstrap.servers"] == f"127.0.0.1:{sasl_port}"
    assert sasl_env not in repr(from_home)
    assert _round_trip(from_home, "security_home")[1] == {"key": {"id": 2}, "value": None}
