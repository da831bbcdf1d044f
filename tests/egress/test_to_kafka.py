"""to-kafka on the real broker, registry and Delta: zync's offset alignment, shapes, restart, follow."""

from __future__ import annotations

import datetime as dt
import os
import threading
import time

import pytest
from confluent_kafka import Producer

from egress import to_kafka
from egress.to_kafka import Egress, OffsetMismatchError
from tests.egress.helpers import out_rows, published, write_output_table
from zync import kafka_client
from zync.errors import ZyncError
from zync.wire import Registry

KEY = "struct<id:bigint>"
VALUE = "struct<id:bigint,name:string,amount:double>"


def _high(target, topic) -> int:
    return kafka_client.high_water_marks(target, topic)[0] if kafka_client.topic_exists(target, topic) else 0


def _values(target, topic):
    return [(r["kafka"]["offset"], r["key"], r["value"]) for r in published(target, topic)]


def test_publishes_out_rows_in_order_with_each_rows_fields(target, spark):
    topic, table = "egress_Shapes", "egress_shapes"
    write_output_table(spark, table, KEY, VALUE, [
        *out_rows(topic, 0, [
            ({"id": 1}, {"id": 1, "name": "a", "amount": 1.5}, ["id", "name", "amount"]),
            ({"id": 1}, {"id": 1, "name": None, "amount": 2.5}, ["id", "amount"]),   # partial update
            ({"id": 2}, None, None),                                                 # tombstone
            ({"id": 3}, {"id": 3, "name": "c", "amount": None}, ["id", "name", "amount"]),
        ]),
        ("done", "egress_input", 0, None, None, None),
        ("cursor", "egress_input", 1, None, None, None),
    ])
    assert Egress(target, table).run() == 4
    assert _values(target, topic) == [
        (0, {"id": 1}, {"id": 1, "name": "a", "amount": 1.5}),
        (1, {"id": 1}, {"id": 1, "amount": 2.5}),  # exactly its fields: no name at all
        (2, {"id": 2}, None),
        (3, {"id": 3}, {"id": 3, "name": "c", "amount": None}),
    ]
    registry = Registry(target.schema_registry)
    assert len(registry.client.get_versions(f"{topic}-value")) == 2
    assert len(registry.client.get_versions(f"{topic}-key")) == 1


def test_restart_after_a_crash_publishes_each_record_once(target, spark):
    topic, table = "egress_Restart", "egress_restart"
    write_output_table(spark, table, KEY, VALUE, out_rows(topic, 0, [
        ({"id": i}, {"id": i, "name": f"n{i}", "amount": float(i)}, None) for i in range(7)]))

    class CrashesAfterFirstBatch(Egress):
        def _batches(self, encoded, pending):
            batches = super()._batches(encoded, pending)
            yield next(batches)
            batches.close()
            raise RuntimeError("simulated crash")

    with pytest.raises(RuntimeError, match="simulated crash"):
        CrashesAfterFirstBatch(target, table, batch_size=3).run()
    published = kafka_client.high_water_marks(target, topic)[0]
    assert 0 < published < 7
    assert Egress(target, table, batch_size=3).run() == 7 - published
    assert Egress(target, table).run() == 0
    assert [(o, k["id"], v["id"]) for o, k, v in _values(target, topic)] == [(i, i, i) for i in range(7)]


def test_a_foreign_record_in_the_topic_stops_egress(target, spark):
    topic, table = "egress_Foreign", "egress_foreign"
    rows = [({"id": i}, {"id": i, "name": "x", "amount": 0.0}, None) for i in range(6)]
    write_output_table(spark, table, KEY, VALUE, out_rows(topic, 0, rows[:3]))
    assert Egress(target, table).run() == 3
    intruder = Producer(dict(target.kafka))
    intruder.produce(topic, value=b"not zync's", partition=0)
    intruder.flush()
    write_output_table(spark, table, KEY, VALUE, out_rows(topic, 3, rows[3:]))
    with pytest.raises(OffsetMismatchError, match="another process is writing to this topic"):
        Egress(target, table).run()
    assert kafka_client.high_water_marks(target, topic) == {0: 4}  # nothing more was written


def test_a_writer_during_egress_is_caught_by_the_delivered_offsets(target, spark):
    topic, table = "egress_Race", "egress_race"
    write_output_table(spark, table, KEY, VALUE, out_rows(topic, 0, [
        ({"id": i}, {"id": i, "name": "x", "amount": 0.0}, None) for i in range(6)]))

    class RacedByAnotherWriter(Egress):
        first_batch = 0

        def _batches(self, encoded, pending):
            batches = super()._batches(encoded, pending)
            first = next(batches)
            self.first_batch = first.num_rows
            yield first
            # The first batch is out: another producer slips a record in.
            while kafka_client.high_water_marks(target, topic)[0] < first.num_rows:
                time.sleep(0.05)
            other = Producer(dict(target.kafka))
            other.produce(topic, value=b"intruder", partition=0)
            other.flush()
            yield from batches

    egress = RacedByAnotherWriter(target, table, batch_size=2)
    with pytest.raises(OffsetMismatchError, match=r"output offset (\d+) landed at Kafka offset") as raised:
        egress.run()
    assert 0 < egress.first_batch < 6
    assert f"output offset {egress.first_batch} landed at Kafka offset {egress.first_batch + 1}" in str(raised.value)


def test_two_egresses_of_one_output_at_once_publish_each_record_once(target, spark, tmp_path, monkeypatch):
    """A second egress of the same output (a second `zync run` of the project) while the first is
    mid-pass: it waits its turn, then publishes only the rows past the first's records."""
    monkeypatch.setenv(to_kafka.LOCK_DIR_ENV, str(tmp_path))
    topic, table = "egress_Twice", "egress_twice"
    write_output_table(spark, table, KEY, VALUE, out_rows(topic, 0, [
        ({"id": i}, {"id": i, "name": "x", "amount": 0.0}, None) for i in range(6)]))

    class SlowBetweenBatches(Egress):
        def _batches(self, encoded, pending):
            for batch in super()._batches(encoded, pending):
                yield batch
                time.sleep(1.0)  # the second egress starts meanwhile

    first = SlowBetweenBatches(target, table, batch_size=2)
    second = Egress(target, table, batch_size=2)
    counts, errors = {}, []

    def run(name, egress):
        try:
            counts[name] = egress.run()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    thread = threading.Thread(target=run, args=("first", first))
    thread.start()
    deadline = time.monotonic() + 60
    while _high(target, topic) == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert 0 < _high(target, topic) < 6  # the first is mid-pass
    run("second", second)
    thread.join(60)
    assert not errors, errors
    assert counts == {"first": 6, "second": 0}
    assert [(o, k["id"]) for o, k, _ in _values(target, topic)] == [(i, i) for i in range(6)]


def test_successive_shapes_pass_a_backward_compatibility_rule(target, spark):
    topic, table = "egress_Compat", "egress_compat"
    registry = Registry(target.schema_registry)
    for subject in (f"{topic}-value", f"{topic}-key"):
        registry.client.set_compatibility(subject_name=subject, level="BACKWARD")
    shapes = [["id", "name", "amount"], ["id"], ["id", "amount"], ["id", "name", "amount"], ["name"]]
    write_output_table(spark, table, KEY, VALUE, out_rows(topic, 0, [
        ({"id": i}, {"id": i, "name": "n", "amount": 1.0}, f) for i, f in enumerate(shapes)]))
    assert Egress(target, table).run() == 5
    assert registry.client.get_compatibility(f"{topic}-value") == "BACKWARD"
    assert len(registry.client.get_versions(f"{topic}-value")) == 4
    assert [sorted(v) for _, _, v in _values(target, topic)] == [sorted(f) for f in shapes]
    # The rule is enforced: a shape with a required field (no default) is refused.
    required = {"type": "record", "name": "egress_Compat_value", "namespace": "zync",
                "fields": [{"name": "id", "type": "long"}, {"name": "extra", "type": "string"}]}
    with pytest.raises(ZyncError, match="refused a new schema"):
        registry.register(f"{topic}-value", required)


def test_timestamps_are_instants_whatever_the_time_zones(target, spark):
    topic, table = "egress_Time", "egress_time"
    spark.sql("create database if not exists zync")
    spark.sql(f"""create table zync.{table} using delta as select
        named_struct('topic', '{topic}', 'partition', 0, 'offset', 0L) as kafka, 'out' as kind,
        named_struct('id', 1L) as key,
        named_struct('at', timestamp'2024-03-10 01:30:00', 'day', date'2024-03-10') as value,
        array('at', 'day') as fields, cast(null as string) as status, 'r1' as run_id""")
    old_tz, old_session_tz = os.environ.get("TZ"), spark.conf.get("spark.sql.session.timeZone")
    os.environ["TZ"] = "America/New_York"
    time.tzset()
    spark.conf.set("spark.sql.session.timeZone", "Asia/Kolkata")
    try:
        assert Egress(target, table).run() == 1
    finally:
        spark.conf.set("spark.sql.session.timeZone", old_session_tz)
        if old_tz is None:
            os.environ.pop("TZ")
        else:
            os.environ["TZ"] = old_tz
        time.tzset()
    [(_, _, value)] = _values(target, topic)
    # The table was written with the session time zone at UTC (profiles/profiles.yml).
    assert value == {"at": dt.datetime(2024, 3, 10, 1, 30, tzinfo=dt.timezone.utc), "day": dt.date(2024, 3, 10)}


def test_follow_publishes_new_commits_until_stopped(target, spark, monkeypatch):
    topic, table = "egress_Follow", "egress_follow"
    monkeypatch.setattr(to_kafka, "FOLLOW_POLL_S", 0.2)
    write_output_table(spark, table, KEY, VALUE, out_rows(topic, 0, [({"id": 0}, {"id": 0, "name": "a", "amount": 0.0}, None)]))
    egress = Egress(target, table)
    result: list[int] = []
    follower = threading.Thread(target=lambda: result.append(egress.run(follow=True)))
    follower.start()
    try:
        deadline = time.monotonic() + 180
        while _high(target, topic) < 1 and time.monotonic() < deadline:
            time.sleep(0.1)
        write_output_table(spark, table, KEY, VALUE, out_rows(topic, 1, [
            ({"id": 1}, {"id": 1, "name": "b", "amount": 1.0}, None),
            ({"id": 2}, {"id": 2, "name": "c", "amount": 2.0}, ["id"])]), run_id="r2")
        while _high(target, topic) < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        egress.stop()
        follower.join(timeout=180)
    assert not follower.is_alive()
    assert result == [3]
    assert [v for _, _, v in _values(target, topic)] == [
        {"id": 0, "name": "a", "amount": 0.0}, {"id": 1, "name": "b", "amount": 1.0}, {"id": 2}]


def test_shaper_reshapes_what_is_published(target, spark, tmp_path):
    topic, table = "egress_Shaper", "egress_shaper"
    write_output_table(spark, table, KEY, VALUE, out_rows(topic, 0, [
        ({"id": 1}, {"id": 1, "name": "ann", "amount": 2.0}, ["id", "name", "amount"]),
        ({"id": 2}, {"id": 2, "name": "bob", "amount": None}, ["id", "name"])]))
    shaper = tmp_path / "shape.sql"
    shaper.write_text("select kafka, key, named_struct('id', value.id, 'label', upper(value.name)) as value, "
                      "array('id', 'label') as fields from batch")
    assert Egress(target, table, shaper=shaper).run() == 2
    assert [v for _, _, v in _values(target, topic)] == [{"id": 1, "label": "ANN"}, {"id": 2, "label": "BOB"}]


def test_a_shaper_that_drops_rows_or_kafka_is_refused(target, spark, tmp_path):
    topic, table = "egress_BadShaper", "egress_bad_shaper"
    write_output_table(spark, table, KEY, VALUE, out_rows(topic, 0, [
        ({"id": i}, {"id": i, "name": "x", "amount": 0.0}, None) for i in range(3)]))
    drops = tmp_path / "drops.sql"
    drops.write_text("select * from batch where kafka.offset <> 1")
    with pytest.raises(ZyncError, match="the shaper must keep every row"):
        Egress(target, table, shaper=drops).run()
    no_kafka = tmp_path / "no_kafka.sql"
    no_kafka.write_text("select key, value from batch")
    with pytest.raises(ZyncError, match=r"lacks column\(s\) \['kafka'\]"):
        Egress(target, table, shaper=no_kafka).run()
    assert kafka_client.high_water_marks(target, topic) == {0: 0}


def test_partition_values_hash_as_sparks_own_hash_does(spark):
    # egress.stream picks each batch's partitioning value by Spark's hash computed in Python: a
    # difference would put batches in the wrong partitions (refused as an offset gap, never misordered).
    from pyspark.sql import functions as F

    from egress.stream import _hashing_to_own_index, spark_hash_long

    values = [0, 1, -1, 42, 2**31 - 1, -2**31, 2**32 + 7, 2**63 - 1, -2**63, 123456789012345]
    theirs = [r[0] for r in spark.createDataFrame([(v,) for v in values], "v bigint")
              .select(F.hash("v")).collect()]
    assert [spark_hash_long(v) for v in values] == theirs
    for partitions in (1, 7, 10):
        landing = _hashing_to_own_index(partitions)
        assert [r[0] for r in spark.createDataFrame([(v,) for v in landing], "v bigint")
                .select(F.pmod(F.hash("v"), F.lit(partitions))).collect()] == list(range(partitions))


def test_each_partition_holds_one_batch_of_offsets_and_they_arrive_in_order(spark):
    # Memory follows --batch-size only if partition i holds exactly offsets [lo + i*B, lo + (i+1)*B) and the
    # partitions reach Python in that order. (The partitioning values were once INT literals, which Spark
    # hashes differently: buckets shared partitions out of order, and Python held most of the table.)
    from pyspark.sql import functions as F

    from egress.stream import arrow_batches, in_offset_order, partitioned_by_offset

    lo, hi, size = 7, 7 + 95, 10
    encoded = (spark.range(0, 120, 1, 3)  # a few rows outside [lo, hi) too
               .select(F.col("id").alias("offset"), F.col("id").cast("string").cast("binary").alias("v")))
    ordered = partitioned_by_offset(encoded, lo, hi, size)
    held = (ordered.select(F.spark_partition_id().alias("p"), "offset").groupBy("p")
            .agg(F.min("offset"), F.max("offset"), F.count("*")).orderBy("p").collect())
    assert [tuple(r) for r in held] == [(i, lo + i * size, min(lo + (i + 1) * size, hi) - 1,
                                         min(lo + (i + 1) * size, hi) - lo - i * size) for i in range(10)]
    firsts = [b.column("offset")[0].as_py() for b in in_offset_order(arrow_batches(ordered), lo, hi)]
    assert firsts == [lo + i * size for i in range(10)]
