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


def test_the_embedded_tls_material_chains_to_its_ca_once(tmp_path):
    """What the broker's PEM keystore and the clients need: leaves signed by the CA, the broker named
    for 127.0.0.1 and localhost, a client certificate for client auth, unencrypted PKCS#8 keys."""
    import ipaddress

    from cryptography import x509
    from cryptography.x509.oid import ExtendedKeyUsageOID

    from stack import local_security

    assert local_security.ensure_material(tmp_path) is True
    folder = local_security.security_dir(tmp_path)
    first = {path.name: path.read_bytes() for path in folder.iterdir()}
    assert local_security.ensure_material(tmp_path) is False  # made once, never replaced
    assert {path.name: path.read_bytes() for path in folder.iterdir()} == first

    ca = x509.load_pem_x509_certificate(first["ca.pem"])
    broker = x509.load_pem_x509_certificate(first["broker.pem"])
    client = x509.load_pem_x509_certificate(first["client.pem"])
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    for leaf in (broker, client):
        leaf.verify_directly_issued_by(ca)
    names = broker.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    assert names.get_values_for_type(x509.DNSName) == ["localhost"]
    usage = client.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.CLIENT_AUTH]
    for key in ("ca-key.pem", "broker-key.pem", "client-key.pem"):
        assert first[key].startswith(b"-----BEGIN PRIVATE KEY-----")
        assert (folder / key).stat().st_mode & 0o077 == 0
    keystore = first["broker-keystore.pem"]
    assert keystore == first["broker-key.pem"] + first["broker.pem"] + first["ca.pem"]
    assert len(local_security.sasl_password(tmp_path)) >= 20
