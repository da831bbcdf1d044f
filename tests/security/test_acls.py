"""Kafka ACLs on the embedded broker (KRaft's StandardAuthorizer): a principal the ACLs do not let
read a topic gets a clear authorization error from `zync from-kafka` and `zync consume`, promptly,
not a hang or a "topic does not exist"."""

from __future__ import annotations

import time

import pytest
from confluent_kafka.admin import (
    AclBinding, AclOperation, AclPermissionType, ResourcePatternType, ResourceType, ScramCredentialInfo,
    ScramMechanism, UserScramCredentialUpsertion,
)

from zync import kafka_client, topics
from zync.config import load_target
from zync.errors import ZyncError

READER, READER_PASSWORD = "acl-reader", "acl-reader-pa55word"
NO_READ = "security_acl_no_read"    # the reader may see it, not read it
HIDDEN = "security_acl_hidden"      # the reader may not even see it
PROMPTLY_S = 60  # well under a hang, well over a slow first connection on this machine


def allow(principal: str, topic: str, operation: AclOperation) -> AclBinding:
    return AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, f"User:{principal}", "*",
                      operation, AclPermissionType.ALLOW)


@pytest.fixture(scope="module")
def reader(target, spark):
    """A SCRAM user with ACLs on two topics that hold a record each; its target over SASL_SSL.

    The target has the local target's dbt output but no Spark output of its own: ingest runs on
    the suite's session (`spark`), as `zync from-kafka` would on the local target's."""
    admin = kafka_client.admin(target)  # PLAINTEXT: the broker's super user
    upsert = UserScramCredentialUpsertion(READER, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192),
                                          READER_PASSWORD.encode())
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(timeout=30)
    for topic in (NO_READ, HIDDEN):
        topics.produce(target, topic, [{"key": {"id": 1}, "value": {"id": 1}}])
    for future in admin.create_acls([allow(READER, NO_READ, AclOperation.DESCRIBE),
                                     allow("nobody", HIDDEN, AclOperation.READ)]).values():
        future.result(timeout=30)
    local = load_target("local")
    sasl_port = int(local.kafka["bootstrap.servers"].rsplit(":", 1)[1]) + 2
    kafka = {"bootstrap.servers": f"127.0.0.1:{sasl_port}", "security.protocol": "SASL_SSL",
             "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": READER, "sasl.password": READER_PASSWORD,
             "ssl.ca.location": next(v for k, v in load_target("local-mtls").kafka.items() if k == "ssl.ca.location")}
    return type(local)("acl-reader", local.dbt_output, kafka, local.schema_registry)


def test_a_topic_the_reader_may_not_read_fails_ingest_with_an_authorization_error(reader):
    from ingest.from_kafka import Ingest
    from ingest.from_kafka import ingest_progress

    started = time.monotonic()
    with pytest.raises(ZyncError, match=f"(?i)not authorized.*{NO_READ}|{NO_READ}.*not authorized") as error:
        Ingest(reader, [NO_READ], progress=ingest_progress(live=False)).run(exit_after=1.0)
    assert time.monotonic() - started < PROMPTLY_S
    assert READER_PASSWORD not in str(error.value)


def test_a_topic_the_reader_may_not_see_is_named_as_not_authorized_not_missing(reader):
    started = time.monotonic()
    with pytest.raises(ZyncError, match=f"(?i)not authorized.*{HIDDEN}") as error:
        list(topics.consume(reader, HIDDEN, from_beginning=True, exit_after=1.0))
    assert "does not exist" not in str(error.value)
    assert time.monotonic() - started < PROMPTLY_S
