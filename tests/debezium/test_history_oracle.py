"""A history model (`history: true`) checked version by version against PostgreSQL's own trail.

PostgreSQL -> Debezium (pgoutput, provide.transaction.metadata) -> Kafka -> `zync run` -> the mirror and
its history model. The oracle: an audit trigger on the source table writes every row version (insert,
update, delete) into an audit table, with its transaction's id (txid_current()); PostgreSQL's
pg_xact_commit_timestamp (track_commit_timestamp, which the project's PostgreSQL turns on) gives each
transaction's commit time, which is what Debezium's source.ts_ms carries for a streamed change. The
audit table is not in the connector's table list, so it is neither captured nor mirrored.

The workload: a snapshot, then inserts, updates, a column set to NULL and back, deletes, keys deleted and
created again (also within one transaction), a multi-row transaction that updates one key twice, and a
large TOASTed text left unchanged while other columns change (Debezium writes its unavailable-value
placeholder; the history carries the key's previous value, as the mirror does). Then every streamed
record is delivered again (a replay changes nothing), then a `zync run` process is killed with kill -9
while changes flow and a restarted run takes over. After each step, each key's versions in the history
model (values, valid_from, valid_to, is_current, op, transaction id) must be the trail's.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, replace

import pytest

from testkit.harness import RunProcess
from testkit.invoices import ROOT
from testkit.scratch import drop_relation, make_scratch_project
from zync import kafka_client
from zync.tables import raw_table_name

DB = "dbz_oracle"
PREFIX = "dbzoracle"
CONNECTOR = "dbz-oracle-source"
TOPIC = f"{PREFIX}.public.accounts"
RAW = raw_table_name(TOPIC)
MIRROR = "dbz_oracle_accounts"
HISTORY = f"{MIRROR}_history"
COLUMNS = ("name", "balance", "note", "body")
# md5 hex of distinct strings: pglz cannot shrink it under PostgreSQL's ~2 kB TOAST threshold, so it is
# stored out of line and an update that leaves it alone sends Debezium's placeholder for it.
BIG = 8_192
MIRRORS = f"""\
mirrors:
  - model: {MIRROR}
    topic: {TOPIC}
    history: true
"""

SCHEMA = """
create table accounts (id integer primary key, name text, balance integer, note text, body text);
create table audit_accounts (
    seq bigserial primary key,
    txid bigint not null default txid_current(),
    op text not null,
    id integer not null,
    name text, balance integer, note text, body text
);
create function audit_accounts() returns trigger language plpgsql as $$
begin
    if tg_op = 'DELETE' then
        insert into audit_accounts (op, id) values ('d', old.id);
        return old;
    end if;
    insert into audit_accounts (op, id, name, balance, note, body)
    values (case tg_op when 'INSERT' then 'c' else 'u' end, new.id, new.name, new.balance, new.note, new.body);
    return new;
end $$;
create trigger audit_accounts after insert or update or delete on accounts
    for each row execute function audit_accounts();
"""


def big(seed: int) -> str:
    return f"(select string_agg(md5('{seed}.' || g), '') from generate_series(1, {BIG // 32}) g)"


SNAPSHOT = [
    f"insert into accounts values (1, 'ann', 10, 'n1', null), (2, 'bob', 20, 'n2', null), (3, 'cy', 30, null, null),"
    f" (4, 'dee', 40, 'n4', {big(4)}), (9, 'gone', 90, null, null)",
    "update accounts set balance = 41 where id = 4",   # before the snapshot: the snapshot reads the last
    "delete from accounts where id = 9",               # state, and a key deleted by then not at all
]
# Each item one transaction, streamed after the snapshot.
STREAM = [
    f"insert into accounts values (5, 'eve', 50, 'n5', {big(5)})",
    "update accounts set balance = 11 where id = 1",
    "update accounts set note = null where id = 2",
    "update accounts set note = 'back' where id = 2",
    "update accounts set balance = 42 where id = 4",                    # body unchanged: a snapshot key's TOAST
    "update accounts set name = 'Eve' where id = 5",                    # body unchanged: an insert's TOAST
    "delete from accounts where id = 3",
    "insert into accounts values (3, 'cy again', 31, null, null)",     # created again
    "begin; insert into accounts values (6, 'fay', 60, null, null);"   # many rows, key 1 twice
    " update accounts set balance = 12 where id = 1; update accounts set balance = 13 where id = 1;"
    " update accounts set note = 'multi' where id = 4; delete from accounts where id = 2; commit",
    f"update accounts set body = {big(44)}, note = null where id = 4",  # the TOASTed value changed
    "update accounts set note = 'after change' where id = 4",          # and left alone again
    "delete from accounts where id = 5",
    f"insert into accounts values (5, 'eve 2', 55, null, {big(55)})",  # created again, with a new TOAST
    "update accounts set balance = 56 where id = 5",
    "begin; delete from accounts where id = 6; insert into accounts values (6, 'fay 2', 61, 'n6', null); commit",
]
# While a `zync run` process runs (and is killed): each a transaction, some over several keys.
BURST = [
    f"begin; update accounts set balance = balance + {i} where id = {1 + i % 6};"
    f" update accounts set note = 'burst {i}' where id = {1 + (i + 3) % 6}; commit"
    for i in range(18)
] + [f"update accounts set body = {big(400)} where id = 4", "update accounts set name = 'Dee' where id = 4"]


@dataclass(frozen=True)
class Version:
    values: tuple
    valid_from: int | None  # epoch milliseconds
    valid_to: int | None
    is_current: bool
    op: str
    transaction: str | None


def trail(debezium) -> tuple[list[dict], bool]:
    """The audit trail in write order, each row with its transaction's commit time in epoch milliseconds
    (truncated, as Debezium's source.ts_ms); and whether PostgreSQL tracks commit times."""
    setting = debezium.query("select current_setting('track_commit_timestamp') as tracked", DB)[0]["tracked"]
    tracked = setting == "on"
    commit = ("floor(extract(epoch from pg_xact_commit_timestamp((txid % 4294967296)::text::xid)) * 1000)::bigint"
              if tracked else "null::bigint")
    rows = debezium.query(f"select seq, txid, op, id, name, balance, note, body, {commit} as commit_ms "
                          "from audit_accounts order by seq", DB)
    return rows, tracked


def expected_versions(rows: list[dict], snapshot_seq: int) -> dict[int, list[Version]]:
    """Each key's versions as the trail says (hard_deletes: invalidate): a version per insert and update,
    valid from its commit to its key's next change's commit; a delete ends one and adds none. What the
    snapshot read is one version of the key's state then, op r, no transaction; its valid_from is the
    snapshot's time, which the trail does not know: here the commit of the state it read (a lower bound)."""
    events: dict[int, list[tuple]] = {}
    for row in rows:
        values = tuple(row[c] for c in COLUMNS)
        if row["seq"] <= snapshot_seq:  # the snapshot reads the last of these
            events[row["id"]] = [] if row["op"] == "d" else [("r", values, row["commit_ms"], None)]
        else:
            events.setdefault(row["id"], []).append((row["op"], values, row["commit_ms"], str(row["txid"])))
    versions: dict[int, list[Version]] = {}
    for key, changes in events.items():
        for i, (op, values, at, txid) in enumerate(changes):
            if op == "d":
                continue
            following = changes[i + 1] if i + 1 < len(changes) else None
            versions.setdefault(key, []).append(Version(values, at, following[2] if following else None,
                                                        following is None, op, txid))
    return versions


def history_versions(spark) -> dict[int, list[Version]]:
    rows = spark.sql(
        f"select id, {', '.join(COLUMNS)}, unix_millis(valid_from) as valid_from, unix_millis(valid_to) as valid_to,"
        f" is_current, _zync_op, _zync_transaction from zync.{HISTORY}"
        " order by id, _zync_position, _zync_kafka.partition, _zync_kafka.offset").collect()
    versions: dict[int, list[Version]] = {}
    for r in rows:
        # Debezium's PostgreSQL transaction id is "<txid>:<lsn>"
        transaction = r["_zync_transaction"].split(":")[0] if r["_zync_transaction"] is not None else None
        versions.setdefault(r["id"], []).append(Version(tuple(r[c] for c in COLUMNS), r["valid_from"],
                                                        r["valid_to"], r["is_current"], r["_zync_op"], transaction))
    return versions


def shown(version: Version | None) -> str:
    if version is None:
        return "none"
    values = tuple(v if not isinstance(v, str) or len(v) < 40 else f"<{len(v)} chars {v[:12]}...>"
                   for v in version.values)
    return str(replace(version, values=values))


def compare(expected: dict[int, list[Version]], actual: dict[int, list[Version]], tracked: bool) -> tuple[int, list]:
    """(versions matched, differences). A snapshot version's valid_from is the snapshot's time: at or after
    its row's commit (expected_versions' valid_from) and at or before the key's next change. Without
    commit times (tracked false) the times are only checked to be there, and open on current versions."""
    matched, differences = 0, []
    for key in sorted(set(expected) | set(actual)):
        wanted, got = expected.get(key, []), actual.get(key, [])
        for i in range(max(len(wanted), len(got))):
            w = wanted[i] if i < len(wanted) else None
            g = got[i] if i < len(got) else None
            same = w is not None and g is not None
            if same and not tracked:
                same = (replace(w, valid_from=None, valid_to=None) == replace(g, valid_from=None, valid_to=None)
                        and g.valid_from is not None and (g.valid_to is None) == w.is_current)
            elif same and w.op == "r":
                same = (replace(w, valid_from=None) == replace(g, valid_from=None) and g.valid_from is not None
                        and (w.valid_from is None or g.valid_from >= w.valid_from)
                        and (w.valid_to is None or g.valid_from <= w.valid_to))
            elif same:
                same = w == g
            if same:
                matched += 1
            else:
                differences.append(f"key {key} version {i}: trail {shown(w)} / history {shown(g)}")
    return matched, differences


@pytest.fixture(scope="module")
def source(debezium, spark):
    for relation in (RAW, MIRROR, HISTORY):
        drop_relation(spark, f"zync.{relation}")
    debezium.database(DB)
    debezium.psql(SCHEMA + ";".join(SNAPSHOT), DB)
    snapshot_seq = debezium.query("select max(seq) as seq from audit_accounts", DB)[0]["seq"]
    debezium.source(CONNECTOR, DB, ["public.accounts"], PREFIX, **{"provide.transaction.metadata": "true"})
    debezium.wait_records(TOPIC, 4)
    yield snapshot_seq
    debezium.delete(CONNECTOR)


def test_history_model_is_postgresql_audit_trail_version_by_version(source, debezium, target, spark, tmp_path):
    from service.run import Service
    from tests.service.test_whole_database import cycles_until
    from zync.progress import Progress

    started = time.monotonic()
    snapshot_seq = source
    project = make_scratch_project(tmp_path / "oracle", {"db.yml": MIRRORS}, spark=spark)
    for shared in ("profiles", ".local", "jvm"):
        (project.path / shared).symlink_to(ROOT / shared)
    report: dict[str, tuple[int, int]] = {}

    def caught_up(step: str) -> None:
        """The history holds the whole trail so far; record the versions compared and matched."""
        rows, tracked = trail(debezium)
        expected = expected_versions(rows, snapshot_seq)
        matched, differences = compare(expected, history_versions(spark), tracked)
        compared = sum(len(v) for v in expected.values())
        report[step] = (compared, matched)
        print(f"history oracle, {step}: {matched} of {compared} versions match", file=sys.stderr)
        assert not differences, f"{step}: {len(differences)} versions differ:\n" + "\n".join(differences)

    def settle(service, most: int = 6) -> None:
        """Cycles until the raw table holds the topic and the history as many versions as the trail."""
        def done() -> bool:
            rows, _ = trail(debezium)
            wanted = sum(len(v) for v in expected_versions(rows, snapshot_seq).values())
            return (spark.catalog.tableExists(f"zync.{HISTORY}") and raw_count() >= debezium.count(TOPIC)
                    and spark.table(f"zync.{HISTORY}").count() >= wanted)
        for _ in range(most):
            service.cycle()
            if done():
                return

    def records_since(seq: int) -> int:
        """The connector's records of the changes after the trail's `seq`: one each, and a tombstone per delete."""
        return debezium.query("select count(*) + count(*) filter (where op = 'd') as n from audit_accounts "
                              f"where seq > {seq}", DB)[0]["n"]

    def raw_count() -> int:
        return spark.table(f"zync.{RAW}").count() if spark.catalog.tableExists(f"zync.{RAW}") else 0

    def history_rows() -> Counter:
        return Counter(map(tuple, spark.table(f"zync.{HISTORY}").collect()))

    with Service(target, root=project.path, status=Progress.for_run(live=False)) as service:
        service.discovery.every_s = 0
        settle(service)
        caught_up("snapshot")
        # The trail is PostgreSQL's own: not captured, so not ingested or mirrored either.
        assert raw_table_name(f"{PREFIX}.public.audit_accounts") not in {t.name for t in spark.catalog.listTables("zync")}
        assert not kafka_client.topic_exists(target, f"{PREFIX}.public.audit_accounts")

        snapshot_records = debezium.count(TOPIC)
        for statement in STREAM:
            debezium.psql(statement, DB)
        streamed = records_since(snapshot_seq)
        debezium.wait_records(TOPIC, snapshot_records + streamed)
        settle(service)
        caught_up("stream")

        # Every streamed record delivered again: the history does not change.
        before = history_rows()
        assert debezium.replay(TOPIC, snapshot_records) == streamed
        debezium.wait_records(TOPIC, snapshot_records + 2 * streamed)
        settle(service)
        assert raw_count() == snapshot_records + 2 * streamed
        assert history_rows() == before
        caught_up("replay")

    # A `zync run` process, killed with kill -9 while the burst flows: it has taken the burst's first
    # transaction and is running its models on it (a cycle with changes takes seconds), more changes
    # arriving meanwhile. Then a restarted run, in this process.
    def landed(rows: int, run: RunProcess, what: str) -> None:
        deadline = time.monotonic() + 120
        while raw_count() < rows:
            assert run.process.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, f"the zync run process took no {what}:\n" + log.read_text()[-3000:]
            time.sleep(0.2)

    errors: list[Exception] = []

    def flow() -> None:
        try:
            for statement in BURST[1:]:
                debezium.psql(statement, DB)
                time.sleep(0.3)
        except Exception as e:  # noqa: BLE001 - failed below, in the test's thread
            errors.append(e)

    log = tmp_path / "zync-run.log"
    burst = threading.Thread(target=flow)
    run = RunProcess(project, log)
    try:
        debezium.psql(BURST[0], DB)
        landed(raw_count() + 1, run, "change")
        burst.start()
        time.sleep(2.0)
        flowing = burst.is_alive()
    finally:
        run.kill()
        if burst.ident is not None:
            burst.join()
    assert not errors, errors
    at_kill = (raw_count(), spark.table(f"zync.{HISTORY}").count(),
               sum(len(v) for v in expected_versions(trail(debezium)[0], snapshot_seq).values()))
    with Service(target, root=project.path, status=Progress.for_run(live=False)) as service:
        service.discovery.every_s = 0
        debezium.wait_records(TOPIC, snapshot_records + records_since(snapshot_seq) + streamed)
        settle(service)
        caught_up("kill -9 and restart")
    print(f"history oracle: killed {'while' if flowing else 'after'} the burst flowed, at {at_kill[0]} raw records "
          f"and {at_kill[1]} of {at_kill[2]} versions; {time.monotonic() - started:.0f}s; {report}", file=sys.stderr)
    assert list(report) == ["snapshot", "stream", "replay", "kill -9 and restart"]
