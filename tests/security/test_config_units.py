"""Connection settings: zync's $HOME files mapped to librdkafka, secrets hidden, file paths resolved."""

from __future__ import annotations

import json

import pytest

from zync.config import Target, project_dir, redacted, zync_home_settings
from zync.errors import ZyncError
from zync.wire import Registry


def test_zyncs_kafka_json_maps_to_librdkafka_properties(tmp_path):
    (tmp_path / ".zync").mkdir()
    (tmp_path / ".zync" / "kafka.json").write_text(json.dumps({
        "bootstrap_servers": ["b1:9092", "b2:9092"], "security_protocol": "SSL", "sasl_mechanisms": "PLAIN",
        "tls_server_ca_cert_file": "/ca.pem", "tls_client_cert_file": "/c.pem", "tls_client_key_file": "/c.key"}))
    (tmp_path / ".zync" / "schema_registry.json").write_text(json.dumps(
        {"url": "https://r:8081", "user": "u", "password": "p4ss"}))
    kafka, registry = zync_home_settings(tmp_path)
    # zync's samples name a SASL mechanism even without SASL; it is dropped then.
    assert kafka == {"bootstrap.servers": "b1:9092,b2:9092", "security.protocol": "SSL", "ssl.ca.location": "/ca.pem",
                     "ssl.certificate.location": "/c.pem", "ssl.key.location": "/c.key"}
    assert registry == {"url": "https://r:8081", "basic.auth.user.info": "u:p4ss"}


def test_a_broken_home_file_is_named(tmp_path):
    (tmp_path / ".zync").mkdir()
    (tmp_path / ".zync" / "kafka.json").write_text("{not json")
    with pytest.raises(ZyncError, match=r"kafka.json: not readable JSON"):
        zync_home_settings(tmp_path)


def test_secrets_never_show_in_a_target_or_a_registry_url():
    target = Target("t", {}, {"bootstrap.servers": "b:1", "sasl.password": "hunter2"},
                    {"url": "http://me:hunter2@r:8081/x", "basic.auth.user.info": "me:hunter2"})
    assert "hunter2" not in repr(target)
    assert redacted(target.kafka) == {"bootstrap.servers": "b:1", "sasl.password": "***"}
    assert Registry({"url": "http://me:hunter2@r:8081/x"}).url == "http://r:8081/x"
    assert project_dir().is_dir()
