"""The Spark reader's pure parts: how a batch's offsets are planned, and how a profile reaches the Java client."""

from __future__ import annotations

import pytest

from ingest.java_kafka import NoJavaEquivalent, java_kafka_options
from ingest.spark_job import plan


def test_a_batch_reads_from_the_next_offset_to_the_high_water_mark():
    assert plan({0: 10, 1: 3}, low={0: 0, 1: 0}, high={0: 15, 1: 3}, budget=100) == {0: (10, 15)}


def test_a_partition_never_read_starts_at_its_low_water_mark():
    # Retention deleted offsets 0-6: there is nothing older to read.
    assert plan({}, low={0: 7}, high={0: 9}, budget=100) == {0: (7, 9)}
    assert plan({0: 2}, low={0: 7}, high={0: 9}, budget=100) == {0: (7, 9)}


def test_the_budget_is_shared_so_a_busy_partition_cannot_starve_the_others():
    ranges = plan({}, low={0: 0, 1: 0, 2: 0}, high={0: 1000, 1: 5, 2: 1000}, budget=105)
    assert ranges == {0: (0, 50), 1: (0, 5), 2: (0, 50)}
    assert sum(e - s for s, e in ranges.values()) == 105


def test_nothing_to_read_plans_nothing():
    assert plan({0: 5}, low={0: 0}, high={0: 5}, budget=10) == {}


def test_plaintext_passes_the_servers_only():
    assert java_kafka_options({"bootstrap.servers": "b:9092"}) == {
        "kafka.bootstrap.servers": "b:9092", "kafka.security.protocol": "PLAINTEXT"}


@pytest.mark.parametrize("mechanism, module", [
    ("SCRAM-SHA-512", "org.apache.kafka.common.security.scram.ScramLoginModule"),
    ("PLAIN", "org.apache.kafka.common.security.plain.PlainLoginModule"),
])
def test_sasl_credentials_become_a_jaas_line_with_quotes_escaped(tmp_path, mechanism, module):
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    options = java_kafka_options({"bootstrap.servers": "b:9094", "security.protocol": "sasl_ssl",
                                  "sasl.mechanism": mechanism, "sasl.username": "zync",
                                  "sasl.password": 'pa"ss\\word', "ssl.ca.location": str(ca)})
    assert options["kafka.security.protocol"] == "SASL_SSL"
    assert options["kafka.sasl.mechanism"] == mechanism
    assert options["kafka.sasl.jaas.config"] == f'{module} required username="zync" password="pa\\"ss\\\\word";'
    assert options["kafka.ssl.truststore.type"] == "PEM"
    assert options["kafka.ssl.truststore.certificates"] == ca.read_text()


def test_a_client_certificate_becomes_a_pem_key_store(tmp_path):
    (tmp_path / "c.pem").write_text("CERT")
    (tmp_path / "k.pem").write_text("KEY")
    options = java_kafka_options({"bootstrap.servers": "b:9095", "security.protocol": "SSL",
                                  "ssl.certificate.location": str(tmp_path / "c.pem"),
                                  "ssl.key.location": str(tmp_path / "k.pem"),
                                  "ssl.endpoint.identification.algorithm": "none"})
    assert options["kafka.ssl.keystore.type"] == "PEM"
    assert (options["kafka.ssl.keystore.certificate.chain"], options["kafka.ssl.keystore.key"]) == ("CERT", "KEY")
    assert options["kafka.ssl.endpoint.identification.algorithm"] == ""


@pytest.mark.parametrize("settings, named", [
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "GSSAPI"}, "sasl.mechanism GSSAPI"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}, "without sasl.username"),
    ({"socket.keepalive.enable": "true"}, "socket.keepalive.enable"),
    ({"security.protocol": "SSL", "ssl.ca.location": "/nowhere/ca.pem"}, "ssl.ca.location /nowhere/ca.pem"),
])
def test_a_setting_without_a_java_form_is_named_not_dropped(settings, named):
    with pytest.raises(NoJavaEquivalent, match=named):
        java_kafka_options({"bootstrap.servers": "b:1", **settings})
