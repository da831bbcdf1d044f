"""Torn reads: a source database whose transactions keep two invariants across tables, and a reader
that checks them on the mirrors while `zync run` moves every change.

The source (PostgreSQL): accounts in two tables, `checking` and `savings`, and `orders` with their
`lines`. Every transaction keeps both invariants, so the database never holds a state that breaks
them:
- a transfer debits an account of one table and credits an account of the other: the two tables'
  balances always sum to ACCOUNTS * 2 * OPENING_BALANCE;
- an order comes with its lines in one transaction, its total their sum; a change of a line changes
  its order's total in the same transaction; an order is deleted with its lines.

`workload(seconds, rate)` is a procedure run inside PostgreSQL (one psql call, a COMMIT per
transaction), so the rate does not depend on a client's round trips.

A read is ONE query over the four mirrors (one Spark query resolves every table once; without Spark,
delta-rs reads each base at the version recorded for the settled cut); it counts what the source never
had: a balance total other than the constant, an order whose total is not its lines' sum, lines
without their order.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

ACCOUNTS = 20
OPENING_BALANCE = 1000
TOTAL_BALANCE = ACCOUNTS * 2 * OPENING_BALANCE
TABLES = ["public.checking", "public.savings", "public.orders", "public.lines"]

SCHEMA_SQL = f"""
create table checking (id int primary key, balance bigint not null);
create table savings (id int primary key, balance bigint not null);
create table orders (id int primary key, total bigint not null);
create table lines (id int primary key, order_id int not null, amount bigint not null);
insert into checking select g, {OPENING_BALANCE} from generate_series(1, {ACCOUNTS}) g;
insert into savings select g, {OPENING_BALANCE} from generate_series(1, {ACCOUNTS}) g;
insert into orders values (1, 30);
insert into lines values (1, 1, 10), (2, 1, 20);

create procedure workload(seconds float8, rate float8, seed float8) language plpgsql as $$
declare
  deadline timestamptz := clock_timestamp() + seconds * interval '1 second';
  n bigint := 0;
  -- on from the ids the database holds: a second call goes on where the first left off
  next_order int := (select coalesce(max(id), 1) from orders);
  next_line int := (select coalesce(max(id), 2) from lines);
  lines_of int;
  change bigint;
  debited int;
  credited int;
  picked int;
  line record;
begin
  perform setseed(seed);
  while clock_timestamp() < deadline loop
    n := n + 1;
    change := 1 + floor(random() * 50);
    -- picked before the statements: random() in a WHERE clause is drawn again for every row
    debited := 1 + floor(random() * {ACCOUNTS});
    credited := 1 + floor(random() * {ACCOUNTS});
    case n % 5
      when 0, 1 then  -- a transfer, either way between the two tables
        if random() < 0.5 then
          update checking set balance = balance - change where id = debited;
          update savings set balance = balance + change where id = credited;
        else
          update savings set balance = balance - change where id = debited;
          update checking set balance = balance + change where id = credited;
        end if;
      when 2, 3 then  -- a new order and its lines
        next_order := next_order + 1;
        lines_of := 1 + floor(random() * 3);
        insert into orders values (next_order, 0);
        for i in 1 .. lines_of loop
          next_line := next_line + 1;
          insert into lines values (next_line, next_order, change + i);
        end loop;
        update orders set total = (select sum(l.amount) from lines l where l.order_id = next_order)
         where id = next_order;
      else  -- a line changed with its order's total, or an order deleted with its lines
        picked := 1 + floor(random() * next_order);
        if random() < 0.8 then
          for line in select id from lines where order_id = picked order by id limit 1 loop
            update lines set amount = amount + 1 where id = line.id;
            update orders set total = total + 1 where id = picked;
          end loop;
        else
          delete from lines where order_id = picked;
          delete from orders where id = picked;
        end if;
    end case;
    commit;
    perform pg_sleep(1.0 / rate);
  end loop;
end $$;
"""


MIRRORED = ("checking", "savings", "orders", "lines")


def invariant_query(schema: str, mirror_prefix: str) -> str:
    """One query over the four mirrors: (balance total, torn orders, mirror rows)."""
    return _invariants({t: f"{schema}.{mirror_prefix}{t}" for t in MIRRORED})


def settled_invariant_query(schema: str, pool: str, connector: str, mirror_prefix: str) -> Callable[[Any], str | None]:
    """The invariants of the four mirrors at their connector's newest settled cut, as an analyst reads it by
    hand: the cut's row of `<pool>__settled` first, then each mirror's base `VERSION AS OF` its version
    there. A function of the reader's session giving the query (None before a first settled cut)."""
    def query(spark) -> str | None:
        if not spark.catalog.tableExists(f"{schema}.{pool}__settled"):
            return None
        newest = spark.sql(f"select end_offset, versions from {schema}.{pool}__settled "
                           f"where connector = '{connector}' order by end_offset desc limit 1").first()
        if newest is None:
            return None
        versions = newest["versions"]
        return _invariants({t: f"{schema}.{mirror_prefix}{t}__base version as of {versions[f'{schema}.{mirror_prefix}{t}']}"
                            for t in MIRRORED}, cut=newest["end_offset"])
    return query


def settled_delta_rs_read(warehouse: str, schema: str, pool: str, connector: str,
                          mirror_prefix: str) -> Callable[[], dict | None]:
    """One read of the same invariants at the newest settled cut without Spark: delta-rs over the bases at
    their recorded versions (zync/settled_reads.py), as a dashboard or a notebook reads them. None before
    a first settled cut."""
    import pyarrow as pa

    from zync.settled_reads import newest_settled_cut

    def read() -> dict | None:
        cut = newest_settled_cut(warehouse, schema, pool, connector)
        if cut is None:
            return None
        (row,) = pa.table(cut.query(_invariants({t: f"{mirror_prefix}{t}" for t in MIRRORED},
                                                cut=cut.end_offset))).to_pylist()
        return row
    return read


def _invariants(m: dict[str, str], cut: int | None = None) -> str:
    return f"""
    select
      (select sum(balance) from {m['checking']}) + (select sum(balance) from {m['savings']}) as balance_total,
      (select count(*) from {m['orders']} o
         full outer join (select order_id, sum(amount) as lines_total from {m['lines']} group by order_id) l
           on o.id = l.order_id
        where o.id is null or l.order_id is null or o.total <> l.lines_total) as torn_orders,
      (select count(*) from {m['orders']}) as orders,
      {cut if cut is not None else 'null'} as cut
    """


@dataclass
class Reads:
    """What a reader saw: reads, and those that showed a state the source never had."""

    reads: int = 0
    torn: int = 0
    seconds: float = 0.0  # spent reading
    examples: list[tuple] = field(default_factory=list)
    cuts: set[int] = field(default_factory=set)  # the settled cuts read (reads at the settled cut)
    while_writing: int = 0  # of `reads`, those done while the workload ran

    def add(self, balance_total: int | None, torn_orders: int, orders: int, cut: int | None = None) -> None:
        self.reads += 1
        if cut is not None:
            self.cuts.add(cut)
        if balance_total != TOTAL_BALANCE or torn_orders:
            self.torn += 1
            if len(self.examples) < 5:
                self.examples.append((balance_total, torn_orders, orders))


class Reader:
    """Reads each mirror set's invariants in turn, without pause, on a thread of its own, until stopped."""

    def __init__(self, spark, queries: dict[str, str | Callable[[Any], str | None]] | None = None,
                 reads: dict[str, Callable[[], dict | None]] | None = None):
        """`queries`: name -> the invariant query, or a function of the reader's session giving it (None:
        nothing to read yet), read on a Spark session of the reader's own. `reads`: name -> a read without
        Spark, giving the invariants' row (None: nothing to read yet)."""
        # A session of its own, as an analyst's: `zync run` changes its engine session's settings
        # between its steps, and a query planned meanwhile on that session failed in Spark's planner.
        self.spark = spark.newSession() if queries else None
        self.runs = {name: self._spark_read(query) for name, query in (queries or {}).items()} | (reads or {})
        self.reads = {name: Reads() for name in self.runs}
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="torn-reads", daemon=True)

    def _spark_read(self, query: str | Callable[[Any], str | None]) -> Callable[[], dict | None]:
        def read() -> dict | None:
            sql = query(self.spark) if callable(query) else query
            return None if sql is None else self.spark.sql(sql).first().asDict()
        return read

    def start(self) -> "Reader":
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            for name, run in self.runs.items():
                started = time.monotonic()
                try:
                    row = run()
                    if row is None:
                        time.sleep(0.2)
                        continue
                    self.reads[name].seconds += time.monotonic() - started
                except Exception as e:  # a read that failed is reported, not counted as clean
                    self.errors.append(f"{name}: {' '.join(str(e).splitlines()[:3])[:600]}")
                    time.sleep(0.2)
                    continue
                self.reads[name].add(row["balance_total"], row["torn_orders"], row["orders"], row["cut"])

    def halt(self) -> None:
        """Stop reading after the read under way, without waiting for it."""
        self._stop.set()

    def stop(self) -> dict[str, Reads]:
        self._stop.set()
        self._thread.join(timeout=120)
        return self.reads
