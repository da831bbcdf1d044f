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


# --- Two tables, transactions over both: all mirrors as of one time (zync_as_of_cut) --------------------------

TX_DB = "dbz_oracle_tx"
TX_PREFIX = "dbzoracletx"
TX_CONNECTOR = "dbz-oracle-tx-source"
TX_POOL = "raw_dbzoracletx"
TX_TABLES = {"orders": ("total",), "lines": ("order_id", "qty")}  # each table's columns besides id
TX_MIRRORS = "\n".join(["mirrors:"] + [
    f"  - model: oracle_{table}\n    topic: {TX_PREFIX}.public.{table}\n    pool: {TX_POOL}\n"
    f"    consistency: transaction\n    history: true\n    hard_deletes: {deletes}"
    for table, deletes in (("orders", "invalidate"), ("lines", "new_record"))]) + "\n"
TX_SCHEMA = """
create table orders (id integer primary key, total integer);
create table lines (id integer primary key, order_id integer, qty integer);
alter table lines replica identity full;  -- a delete's before image is the whole row (new_record keeps it)
create table audit_tx (
    seq bigserial primary key, txid bigint not null default txid_current(),
    tbl text not null, op text not null, id integer not null, a integer, b integer
);
create function audit_tx() returns trigger language plpgsql as $$
declare r record; op text := case tg_op when 'INSERT' then 'c' when 'UPDATE' then 'u' else 'd' end;
begin
    if tg_op = 'DELETE' then r := old; else r := new; end if;
    if tg_table_name = 'orders' then
        insert into audit_tx (tbl, op, id, a) values ('orders', op, r.id, r.total);
    else
        insert into audit_tx (tbl, op, id, a, b) values ('lines', op, r.id, r.order_id, r.qty);
    end if;
    return r;
end $$;
create trigger audit_orders after insert or update or delete on orders for each row execute function audit_tx();
create trigger audit_lines after insert or update or delete on lines for each row execute function audit_tx();
insert into orders values (1, 10), (2, 7);
insert into lines values (1, 1, 10), (2, 2, 3), (3, 2, 4);
"""
# Generated transactions after the hand-written ones: an order and two lines each, every third also
# deleting the previous order with its lines (two such here).
TX_GENERATED = 6
# Each a transaction; every one keeps each order's total equal to its lines' sum.
TX_STREAM = [
    "insert into orders values (3, 15); insert into lines values (4, 3, 5), (5, 3, 10)",
    "update lines set qty = 6 where id = 4; update orders set total = 16 where id = 3",
    "delete from lines where order_id = 2; delete from orders where id = 2",
    "insert into orders values (2, 9); insert into lines values (6, 2, 9)",          # an order created again
    "update orders set total = 11 where id = 1; insert into lines values (7, 1, 1)",
    "delete from lines where id = 1; update orders set total = 1 where id = 1",
    "update orders set total = 20 where id = 3; update lines set qty = 14 where id = 5",
    "update orders set total = total where id = 2",                                  # one table only
] + [f"insert into orders values ({10 + i}, {2 * i + 1}); insert into lines values ({100 + 2 * i}, {10 + i}, {i}),"
     f" ({101 + 2 * i}, {10 + i}, {i + 1})" + (f"; delete from lines where order_id = {9 + i};"
                                              f" delete from orders where id = {9 + i}" if i % 3 == 2 else "")
     for i in range(TX_GENERATED)]


def tx_trail(debezium) -> list[dict]:
    commit = "floor(extract(epoch from pg_xact_commit_timestamp((txid % 4294967296)::text::xid)) * 1000)::bigint"
    return debezium.query(f"select seq, txid, tbl, op, id, a, b, {commit} as commit_ms from audit_tx order by seq", TX_DB)


def tx_values(row: dict) -> tuple:
    return (row["a"],) if row["tbl"] == "orders" else (row["a"], row["b"])


def tx_expected_versions(rows: list[dict], table: str, snapshot_seq: int, new_record: bool) -> dict[int, list[Version]]:
    """expected_versions for one table of the trail, deletes kept as versions (the row as deleted) with new_record."""
    events: dict[int, list[tuple]] = {}
    for row in rows:
        if row["tbl"] != table:
            continue
        if row["seq"] <= snapshot_seq:
            events[row["id"]] = [] if row["op"] == "d" else [("r", (row["id"], *tx_values(row)), row["commit_ms"], None)]
        else:
            events.setdefault(row["id"], []).append((row["op"], (row["id"], *tx_values(row)), row["commit_ms"],
                                                     str(row["txid"])))
    versions: dict[int, list[Version]] = {}
    for key, changes in events.items():
        for i, (op, values, at, txid) in enumerate(changes):
            if op == "d" and not new_record:
                continue
            following = changes[i + 1] if i + 1 < len(changes) else None
            versions.setdefault(key, []).append(Version(values, at, following[2] if following else None,
                                                        following is None and op != "d", op, txid))
    return versions


def tx_history_versions(spark, table: str) -> dict[int, list[Version]]:
    columns = ("id",) + TX_TABLES[table]
    versions: dict[int, list[Version]] = {}
    for r in spark.sql(f"select {', '.join(columns)}, unix_millis(valid_from) as valid_from, unix_millis(valid_to) "
                       f"as valid_to, is_current, _zync_op, _zync_transaction from zync.oracle_{table}_history "
                       "order by id, _zync_position, _zync_kafka.partition, _zync_kafka.offset").collect():
        transaction = r["_zync_transaction"].split(":")[0] if r["_zync_transaction"] is not None else None
        versions.setdefault(r["id"], []).append(Version(tuple(r[c] for c in columns), r["valid_from"], r["valid_to"],
                                                        r["is_current"], r["_zync_op"], transaction))
    return versions


State = tuple[frozenset, frozenset]  # (orders (id, total), lines (id, order_id, qty))


def trail_state(rows: list[dict], at_ms: int) -> State:
    """Both tables as PostgreSQL held them at `at_ms`: every audited change committed by then, applied in order
    (the workload's transactions run one after another, so write order is commit order)."""
    tables: dict[str, dict[int, tuple]] = {"orders": {}, "lines": {}}
    for row in rows:
        if row["commit_ms"] <= at_ms:
            if row["op"] == "d":
                tables[row["tbl"]].pop(row["id"], None)
            else:
                tables[row["tbl"]][row["id"]] = (row["id"], *tx_values(row))
    return frozenset(tables["orders"].values()), frozenset(tables["lines"].values())


def whole(state: State) -> bool:
    """Every order's total is its lines' sum, every line's order exists: what every transaction of the workload keeps."""
    orders, lines = state
    sums: dict[int, int] = {}
    for _, order, qty in lines:
        sums[order] = sums.get(order, 0) + (qty or 0)
    return {o: t for o, t in orders} == {o: sums.get(o, 0) for o, _ in orders} and set(sums) <= {o for o, _ in orders}


def states_as_of(project, spark, times: list[str], own: bool = True) -> tuple[list[State], list[State]]:
    """For each time: (both mirrors by zync_as_of_cut, both by zync_as_of each, or none without `own`),
    compiled by dbt in one call, run."""
    parts = []
    for n, t in enumerate(times):
        parts.append(
            f"{{% set at = zync_as_of_cut([ref('oracle_orders'), ref('oracle_lines')], '{t}') %}}"
            f"select {n} as n, 'cut' as form, 'orders' as tbl, id, total as a, null as b from {{{{ at['oracle_orders'] }}}} as o "
            f"union all select {n}, 'cut', 'lines', id, order_id, qty from {{{{ at['oracle_lines'] }}}} as l"
            + (f" union all select {n}, 'own', 'orders', id, total, null from {{{{ zync_as_of(ref('oracle_orders'), '{t}') }}}} as oo "
               f"union all select {n}, 'own', 'lines', id, order_id, qty from {{{{ zync_as_of(ref('oracle_lines'), '{t}') }}}} as ll"
               if own else ""))
    (result,) = project.dbt("compile", "--inline", "\nunion all\n".join(parts)).results
    found: dict[tuple[int, str], tuple[set, set]] = {(n, f): (set(), set()) for n in range(len(times)) for f in ("cut", "own")}
    for r in spark.sql(result.node.compiled_code).collect():
        orders, lines = found[(r["n"], r["form"])]
        (orders.add((r["id"], r["a"])) if r["tbl"] == "orders" else lines.add((r["id"], r["a"], r["b"])))
    state = {k: (frozenset(o), frozenset(li)) for k, (o, li) in found.items()}
    return [state[(n, "cut")] for n in range(len(times))], [state[(n, "own")] for n in range(len(times))]


def ms_text(ms: int) -> str:
    """Epoch milliseconds as the timestamp text the macros take, in the session's time zone (UTC in the tests)."""
    from datetime import datetime, timezone
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


@pytest.fixture(scope="module")
def tx_source(debezium, spark):
    for table in TX_TABLES:
        for relation in (f"oracle_{table}", f"oracle_{table}_history", raw_table_name(f"{TX_PREFIX}.public.{table}")):
            drop_relation(spark, f"zync.{relation}")
    for relation in (raw_table_name(f"{TX_PREFIX}.transaction"), f"{TX_POOL}__cuts", f"{TX_POOL}__cut", TX_POOL):
        drop_relation(spark, f"zync.{relation}")
    debezium.database(TX_DB)
    debezium.psql(TX_SCHEMA, TX_DB)
    snapshot_seq = debezium.query("select max(seq) as seq from audit_tx", TX_DB)[0]["seq"]
    debezium.source(TX_CONNECTOR, TX_DB, ["public.orders", "public.lines"], TX_PREFIX,
                    **{"provide.transaction.metadata": "true"})
    debezium.wait_records(f"{TX_PREFIX}.public.lines", 3)
    yield snapshot_seq
    debezium.delete(TX_CONNECTOR)


def test_all_mirrors_as_of_a_time_never_show_half_a_transaction(tx_source, debezium, target, spark, tmp_path,
                                                                  monkeypatch):
    """Orders and their lines, changed together, read as of every commit time and the millisecond before it:
    both mirrors by zync_as_of_cut are both tables as PostgreSQL held them then (its own trail), never half a
    transaction; the history models match the trail version by version (lines with hard_deletes: new_record),
    also after every streamed record and transaction boundary was delivered again.
    Then a history model run ahead of the other: the one-table form shows half a transaction, the cut form not."""
    from service.run import Service
    from zync.progress import Progress

    snapshot_seq = tx_source
    project = make_scratch_project(tmp_path / "oracle_tx", {"db.yml": TX_MIRRORS}, spark=spark,
                                   topics=lambda: kafka_client.topic_names(target))
    for shared in ("profiles", ".local", "jvm"):
        (project.path / shared).symlink_to(ROOT / shared)
    started, phases = time.monotonic(), {}

    def phase(name: str) -> None:
        phases[name] = round(time.monotonic() - started - sum(phases.values()), 1)

    snapshot_records = {t: debezium.count(f"{TX_PREFIX}.public.{t}") for t in TX_TABLES}
    for statement in TX_STREAM:
        debezium.psql(f"begin; {statement}; commit", TX_DB)
        time.sleep(0.02)  # commit times a millisecond or more apart, so that each is a point of its own
    rows = tx_trail(debezium)
    streamed = [r for r in rows if r["seq"] > snapshot_seq]
    for table in TX_TABLES:
        debezium.wait_records(f"{TX_PREFIX}.public.{table}", snapshot_records[table] + sum(
            1 + (r["op"] == "d") for r in streamed if r["tbl"] == table))
    debezium.wait_records(f"{TX_PREFIX}.transaction", 2 * len(TX_STREAM))

    phase("stream")

    def caught_up() -> bool:
        """Both histories hold the trail (compare: a snapshot version's valid_from is the snapshot's time)."""
        return all(spark.catalog.tableExists(f"zync.oracle_{t}_history") for t in TX_TABLES) and not any(
            compare(tx_expected_versions(rows, t, snapshot_seq, t == "lines"), tx_history_versions(spark, t), True)[1]
            for t in TX_TABLES)

    def histories() -> dict[str, Counter]:
        return {t: Counter(map(tuple, spark.table(f"zync.oracle_{t}_history").collect())) for t in TX_TABLES}

    def raw_counts() -> dict[str, int]:
        return {t: spark.table(f"zync.{raw_table_name(f'{TX_PREFIX}.public.{t}')}").count() for t in TX_TABLES}

    compared = {}

    def versions_match(step: str) -> None:
        for table in TX_TABLES:
            expected = tx_expected_versions(rows, table, snapshot_seq, table == "lines")
            matched, differences = compare(expected, tx_history_versions(spark, table), tracked=True)
            compared[table] = (sum(len(v) for v in expected.values()), matched)
            assert not differences, f"{step}, {table}: {len(differences)} versions differ:\n" + "\n".join(differences)

    cycles = []
    with Service(target, root=project.path, status=Progress.for_run(live=False)) as service:
        service.discovery.every_s = 0
        for n in range(1, 9):
            service.cycle()
            if caught_up():
                break
        cycles.append(n)
        versions_match("stream")
        assert any(v.op == "d" for vs in tx_expected_versions(rows, "lines", snapshot_seq, True).values() for v in vs)
        phase("zync run")

        # Every streamed record delivered again, the transactions' BEGIN and END too (what a Debezium task
        # sends after a crash before its offsets were flushed): the histories do not change.
        before, raw_before = histories(), raw_counts()
        ends = debezium.count(f"{TX_PREFIX}.transaction")
        sent = {t: debezium.replay(f"{TX_PREFIX}.public.{t}", snapshot_records[t]) for t in TX_TABLES}
        assert debezium.replay(f"{TX_PREFIX}.transaction", 0) == ends
        for table in TX_TABLES:
            debezium.wait_records(f"{TX_PREFIX}.public.{table}", snapshot_records[table] + 2 * sent[table])
        for n in range(1, 5):
            service.cycle()
            if all(raw_counts()[t] >= raw_before[t] + sent[t] for t in TX_TABLES):
                break
        cycles.append(n)
        assert raw_counts() == {t: raw_before[t] + sent[t] for t in TX_TABLES}
        assert histories() == before
        versions_match("replay")
        phase("replay")

    # Every streamed transaction's commit time, and the millisecond before it.
    commits = sorted({r["commit_ms"] for r in streamed})
    assert len(commits) == len(TX_STREAM), "two transactions committed in one millisecond: no point between them"
    times = [t for c in commits for t in (c - 1, c)]
    # (Both histories hold every transaction here, so each one-table read is whole too: what the cut adds is
    # shown below, with one history run ahead of the other.)
    cut_states, _ = states_as_of(project, spark, [ms_text(t) for t in times], own=False)
    phase("as of every commit")
    wrong = [(ms_text(t), got, trail_state(rows, t)) for t, got in zip(times, cut_states) if got != trail_state(rows, t)]
    assert not wrong, wrong[:3]
    assert all(whole(s) for s in cut_states)
    multi = sum(1 for s in TX_STREAM if "orders" in s and "lines" in s)
    print(f"as-of oracle: history versions (compared, matched) {compared}, after a replay too; {len(times)} times "
          f"over {len(commits)} transactions ({multi} over both tables): zync_as_of_cut equal to the trail at "
          f"{len(times) - len(wrong)}, half a transaction at 0", file=sys.stderr)

    # One more order, ingested (the cut takes it), and only the orders' history run: read as of now, the
    # one-table form shows the order without its lines; the cut form gives the newest cut both histories hold.
    held = {topic: debezium.count(topic) for topic in (f"{TX_PREFIX}.transaction", f"{TX_PREFIX}.public.lines")}
    debezium.psql("begin; insert into orders values (50, 12); insert into lines values (500, 50, 12); commit", TX_DB)
    debezium.wait_records(f"{TX_PREFIX}.transaction", held[f"{TX_PREFIX}.transaction"] + 2)
    debezium.wait_records(f"{TX_PREFIX}.public.lines", held[f"{TX_PREFIX}.public.lines"] + 1)
    from cli import main as cli

    monkeypatch.setenv("ZYNC_PROJECT_DIR", str(project.path))
    assert cli.main(["from-kafka", "--topic", f"{TX_PREFIX}.public.orders", "--topic", f"{TX_PREFIX}.public.lines",
                     "--exit-after", "0"]) == 0
    project.dbt("run", "--select", "oracle_orders_history")
    rows = tx_trail(debezium)
    now = max(r["commit_ms"] for r in rows) + 1000
    (cut_now,), (own_now,) = states_as_of(project, spark, [ms_text(now)])
    assert (50, 12) in own_now[0] and not whole(own_now)
    assert cut_now == trail_state(rows, commits[-1]) and whole(cut_now)
    project.dbt("run", "--select", "oracle_lines_history")
    (cut_now,), (own_now,) = states_as_of(project, spark, [ms_text(now)])
    assert cut_now == own_now == trail_state(rows, now)
    phase("one history ahead")
    print(f"as-of oracle, one history run ahead: zync_as_of per table half a transaction, zync_as_of_cut the newest "
          f"cut both hold ({len(cut_now[0])} orders, {len(cut_now[1])} lines after both ran); zync run cycles "
          f"{cycles}; seconds {phases}", file=sys.stderr)
