"""A raw pool on the real broker, registry and Delta: many topics in one commit, each read back through its
raw view exactly as a raw table of its own holds it; resume, evolution and a failing topic."""

from __future__ import annotations

import json

from ingest.pool import PoolIngest
from zync.pools import TYPES_PROPERTY
from tests.ingest.conftest import unique
from tests.ingest.schemas import KEY, ROW_V1, envelope, event
from tests.ingest.test_all_types import SCHEMA, VALUES
from zync import kafka_client
from zync.tables import raw_table_name

# The pool takes every type but a union of several (spark-avro's member0, member1 ...).
POOLABLE = {**SCHEMA, "fields": [f for f in SCHEMA["fields"] if f["name"] not in ("il", "multi")]}
POOLABLE_VALUES = [{k: v for k, v in value.items() if k not in ("il", "multi")} for value in VALUES]


def _pool(target, spark, topics: list[str], name: str) -> PoolIngest:
    return PoolIngest(target, f"zync.{name}", {t: f"zync.{raw_table_name(t)}_pooled" for t in topics}, spark)


def _run(job: PoolIngest, target, topics: list[str]):
    watcher, admin = kafka_client.consumer(target, group="test-pool-watch"), kafka_client.admin(target)
    try:
        return job.run(kafka_client.watermarks(watcher, admin, set(topics)))
    finally:
        watcher.close()


def _rows(spark, relation: str) -> list:
    """Every row as Python values (maps as dicts, timestamps to the microsecond), in offset order."""
    return [tuple(r) for r in spark.sql(f"select kafka.partition, kafka.offset, key, value from {relation} "
                                        "order by kafka.partition, kafka.offset").collect()]


def test_a_pooled_topic_reads_back_as_its_own_raw_table_holds_it(producer, ingest, spark, target):
    typed = producer.topic(unique("pool_types"))
    producer.send(typed, KEY, POOLABLE, [({"id": i}, v) for i, v in enumerate(POOLABLE_VALUES)] + [({"id": 9}, None)])
    debezium = producer.topic(unique("pool_dbz"), partitions=2)
    for p in range(2):
        producer.send(debezium, KEY, envelope(ROW_V1),
                      [({"id": p * 10 + i}, event("c", {"id": p * 10 + i, "name": f"r{i}", "qty": i})) for i in range(4)],
                      partition=p)
    # The same topics through ingest's own path (spark-avro decodes them): what the views must equal.
    assert ingest(typed) == 3 and ingest(debezium) == 8
    job = _pool(target, spark, [typed, debezium], unique("pool"))
    try:
        run = _run(job, target, [typed, debezium])
    finally:
        job.close()
    assert run.records == {typed: 3, debezium: 8} and not run.failed
    # One commit for both topics.
    assert spark.sql(f"describe history {job.pool.sql_name}").count() == 2  # the create, the batch
    for topic in (typed, debezium):
        pooled = _rows(spark, job.views[topic])
        assert pooled == _rows(spark, f"zync.{raw_table_name(topic)}")
        assert len(pooled) == {typed: 3, debezium: 8}[topic]
    assert spark.table(job.views[typed]).schema["value"].dataType.simpleString() == \
        spark.table(f"zync.{raw_table_name(typed)}").schema["value"].dataType.simpleString()


def test_a_pool_resumes_evolves_and_a_failing_topic_stops_alone(producer, spark, target):
    good, bad = producer.topic(unique("pool_good")), producer.topic(unique("pool_bad"))
    row = lambda i: event("c", {"id": i, "name": f"n{i}", "qty": i})  # noqa: E731
    producer.send(good, KEY, envelope(ROW_V1), [({"id": i}, row(i)) for i in range(3)])
    producer.send(bad, KEY, envelope(ROW_V1), [({"id": i}, row(i)) for i in range(2)])
    name = unique("pool")
    job = _pool(target, spark, [good, bad], name)
    try:
        assert _run(job, target, [good, bad]).records == {good: 3, bad: 2}
        # Then: a message that is not Avro in `bad`, a record after it, and a new field in `good`.
        producer.raw(bad, b"not avro", b"not avro either")
        producer.send(bad, KEY, envelope(ROW_V1), [({"id": 5}, row(5))])
        v2 = {**ROW_V1, "fields": ROW_V1["fields"] + [{"name": "email", "type": ["null", "string"], "default": None}]}
        producer.send(good, KEY, envelope(v2), [({"id": 3}, event("c", {"id": 3, "name": "n3", "qty": 3,
                                                                          "email": "a@b"}))])
        second = _run(job, target, [good, bad])
    finally:
        job.close()
    assert second.records == {good: 1}
    assert f"topic {bad} partition 0 offset 2 cannot go into raw pool" in str(second.failed[bad])
    emails = [r.value.after.email for r in spark.sql(
        f"select * from {job.views[good]} order by kafka.offset").collect()]
    assert emails == [None, None, None, "a@b"]
    types = json.loads(dict(spark.sql(f"show tblproperties {job.pool.sql_name}").collect())[TYPES_PROPERTY])
    assert "email" in types[good]["value"]

    # A new ingest resumes from the pool: nothing read twice, `bad` stops at the same message again.
    again = _pool(target, spark, [good, bad], name)
    try:
        third = _run(again, target, [good, bad])
    finally:
        again.close()
    assert third.records == {} and bad in third.failed
    offsets = spark.sql(f"select kafka.topic, kafka.offset from {job.pool.sql_name}").collect()
    assert sorted((r[0], r[1]) for r in offsets) == sorted([(good, o) for o in range(4)] + [(bad, o) for o in range(2)])


def test_a_pool_on_the_s3_server_commits_every_topic_at_once_and_resumes(producer, spark, target, object_store):
    """The pool's Python-written file and its commit go to the S3 server as a raw table's do."""
    first, second = producer.topic(unique("pool_s3a")), producer.topic(unique("pool_s3b"))
    row = lambda i: event("c", {"id": i, "name": f"n{i}", "qty": i})  # noqa: E731
    producer.send(first, KEY, envelope(ROW_V1), [({"id": i}, row(i)) for i in range(3)])
    producer.send(second, KEY, envelope(ROW_V1), [({"id": i}, row(i)) for i in range(2)])
    database = unique("pool_s3_db")
    spark.sql(f"create database {database} location '{object_store}/{database}.db'")
    pool = f"{database}.{unique('pool')}"
    views = {t: f"{database}.{raw_table_name(t)}" for t in (first, second)}
    job = PoolIngest(target, pool, views, spark)
    try:
        assert _run(job, target, [first, second]).records == {first: 3, second: 2}
        producer.send(first, KEY, envelope(ROW_V1), [({"id": 3}, row(3))])
        assert _run(job, target, [first, second]).records == {first: 1}
    finally:
        job.close()
    detail = spark.sql(f"describe detail {pool}").first()
    assert detail["location"].startswith(object_store) and detail["numFiles"] == 2
    assert [r[0] for r in spark.sql(f"describe history {pool}").collect()] == [2, 1, 0]  # two batches, the create
    assert [r.value.after.name for r in spark.sql(f"select * from {views[first]} order by kafka.offset").collect()] \
        == ["n0", "n1", "n2", "n3"]
    # A new ingest resumes from the pool on S3: nothing read twice.
    again = PoolIngest(target, pool, views, spark)
    try:
        assert _run(again, target, [first, second]).records == {}
    finally:
        again.close()
    offsets = spark.sql(f"select kafka.topic, kafka.offset from {pool}").collect()
    assert sorted((r[0], r[1]) for r in offsets) == sorted([(first, o) for o in range(4)] + [(second, o) for o in range(2)])
