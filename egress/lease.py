"""Egress turns across machines: a lease per (Kafka cluster, output topic) in the catalog's database.

Two egresses of one output topic on two machines share no file system, only the object store, the
catalog and Kafka. A file lock cannot make them take turns; a row in the catalog's database can
(the same database the commit claims of tables on an object store live in, as the profile's
Hadoop settings name it: zync.delta.commits.url, else the metastore's own JDBC URL). The row,
kept by the JVM class zync.delta.EgressLease, names its holder, its time to live and a renewal
count. A pass takes the lease before it reads the topic's high-water mark and gives it back after
its last delivery report; meanwhile a heartbeat thread renews it (moves the count on) every quarter
of its time to live (TTL, $ZYNC_EGRESS_LEASE_TTL seconds, default 30; the row keeps its holder's
TTL, so an egress configured otherwise waits out the holder's, not its own). A holder that dies,
kill -9 included, stops renewing: an egress that has seen the lease unrenewed (same holder, same
count) for a whole TTL by its own monotonic clock takes it over; at once when it holds the file
lock of this machine that the dead holder held (egress/to_kafka.py). No clock is compared with
another machine's or the database's.

Fencing: the holder counts its lease as held until 0.8 TTL after the start of its last successful
renewal, by its own monotonic clock. A taker first sees that renewal after it was made, and waits a
full TTL from then, so the holder stops believing in its lease before anyone can take it over
(clocks of the two machines need the same rate, never the same time). Past that
moment, or when a renewal finds another holder, the pass produces no more records, drops those
still queued in the producer, and ends with EgressLeaseLostError; the next pass takes a turn
again and resumes at the topic's high-water mark. A holder paused longer than the TTL (a stopped
process, a frozen machine) between its check and a produce call may still send records after
another has begun: the delivery check (every record at its row's offset) and the next pass's check
of the topic's last record then stop both with an error naming another writer; nothing passes
unnoticed, but what was sent stays.
"""

from __future__ import annotations

import hashlib
import os
import re
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from zync.errors import ZyncError

TTL_ENV = "ZYNC_EGRESS_LEASE_TTL"
DEFAULT_TTL_S = 30.0
MIN_TTL_S = 1.0
RENEWALS_PER_TTL = 4      # the heartbeat renews every TTL / 4: three may fail before the holder stops
HELD_FRACTION = 0.8       # the holder stops producing 0.8 TTL after the start of its last renewal
POLL_S = 0.25             # how often a waiting egress asks for the lease again
JAVA_CLASS = "zync.delta.EgressLease"


class EgressBusyError(ZyncError):
    """Another egress of the topic held its turn (file lock or lease) for longer than the wait."""


class EgressLeaseLostError(ZyncError):
    """A pass lost its topic's lease before it produced every row: it stopped producing."""


def lease_ttl(environ: dict[str, str] | None = None) -> float:
    """The lease's time to live in seconds: $ZYNC_EGRESS_LEASE_TTL, default 30."""
    raw = (os.environ if environ is None else environ).get(TTL_ENV, "").strip()
    if not raw:
        return DEFAULT_TTL_S
    try:
        ttl = float(raw)
    except ValueError:
        raise ZyncError(f"{TTL_ENV}={raw!r} is not a number of seconds") from None
    if not ttl >= MIN_TTL_S or ttl == float("inf"):
        raise ZyncError(f"{TTL_ENV}={raw!r}: the egress lease lives at least {MIN_TTL_S:.0f} s")
    return ttl


def lease_key(cluster: str, topic: str) -> str:
    """The lease's row key: a digest of the Kafka cluster's id and the topic, so any name fits."""
    return hashlib.sha256(f"{len(cluster)}:{cluster}\n{topic}".encode()).hexdigest()


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def lock_domain(lock_file: Path) -> str:
    """Who else takes turns by the same lock file: this machine (host name and boot) and the file.

    A lease whose holder is of the caller's domain, found while the caller holds that lock file,
    has no living holder: the holder keeps the file locked for as long as it holds the lease, and
    the kernel unlocks it when the holder dies. Such a lease is taken at once, not after its TTL.
    """
    where = f"{socket.gethostname()}\n{_boot_id()}\n{Path(lock_file).resolve()}"
    return hashlib.sha256(where.encode()).hexdigest()[:12]


def owner_name(domain: str) -> str:
    """A holder's name, unique to one turn: host, pid, its lock domain and a nonce."""
    return f"{socket.gethostname()} pid {os.getpid()} [{domain}.{uuid.uuid4().hex[:8]}]"


_DOMAIN = re.compile(r"\[([0-9a-f]+)\.[0-9a-f]+\]$")


def owner_domain(owner: str) -> str | None:
    """The lock domain in a holder's name, None for a name not made by owner_name."""
    found = _DOMAIN.search(owner)
    return found.group(1) if found else None


def shown_owner(owner: str) -> str:
    """A holder's name for a message: host and pid."""
    return _DOMAIN.sub("", owner).strip()


@dataclass
class Holding:
    """The holder's view of its lease, by its own monotonic clock: held until `until`, unless lost."""

    ttl_s: float
    until: float
    lost: str | None = None

    @classmethod
    def taken(cls, ttl_s: float, started: float) -> Holding:
        """A lease taken by a call that started at `started`."""
        return cls(ttl_s, started + HELD_FRACTION * ttl_s)

    def renewed(self, started: float) -> None:
        """A renewal that started at `started` succeeded."""
        self.until = max(self.until, started + HELD_FRACTION * self.ttl_s)

    def lose(self, why: str) -> None:
        self.lost = self.lost or why

    def held(self, now: float) -> bool:
        return self.lost is None and now < self.until

    def why_not(self, now: float) -> str:
        if self.lost is not None:
            return self.lost
        return (f"it was not renewed for {now - self.until + HELD_FRACTION * self.ttl_s:.1f} s of its "
                f"{self.ttl_s:.0f} s TTL")


class Leases:
    """The egress leases of the catalog's database, through the Spark driver's JVM."""

    def __init__(self, spark):
        from zync.spark_internals import java_class, java_context

        self._java = java_class(spark, JAVA_CLASS).forConf(java_context(spark).hadoopConfiguration())

    def _call(self, method: str, *args):
        from py4j.protocol import Py4JError, Py4JJavaError

        try:
            return getattr(self._java, method)(*args)
        except Py4JJavaError as e:
            raise ZyncError(f"egress lease: {e.java_exception.getMessage()}") from None
        except Py4JError as e:
            raise ZyncError(f"egress lease: the Spark driver did not answer ({e})") from None

    def acquire(self, key: str, name: str, owner: str, ttl_s: float) -> bool:
        return bool(self._call("acquire", key, name, owner, int(ttl_s * 1000)))

    def renew(self, key: str, owner: str) -> bool:
        return bool(self._call("renew", key, owner))

    def take_from(self, key: str, holder: str, owner: str, ttl_s: float) -> bool:
        return bool(self._call("takeFrom", key, holder, owner, int(ttl_s * 1000)))

    def release(self, key: str, owner: str) -> bool:
        return bool(self._call("release", key, owner))

    def holder(self, key: str) -> tuple[str, float] | None:
        """(holder's name, seconds since its last renewal by the database's clock), or None if free."""
        found = self._call("holder", key)
        if found is None:
            return None
        owner, _, age_ms = str(found).rpartition("\n")
        return owner, int(age_ms) / 1000


@dataclass
class HeldLease:
    """A lease this process holds for one pass, renewed by a heartbeat thread until released."""

    leases: Leases
    key: str
    owner: str
    holding: Holding
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def held(self) -> bool:
        return self.holding.held(time.monotonic())

    def why_lost(self) -> str:
        return self.holding.why_not(time.monotonic())

    def start(self) -> None:
        self._thread = threading.Thread(target=self._beat, name="zync-egress-lease", daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        every = self.holding.ttl_s / RENEWALS_PER_TTL
        while not self._stop.wait(every):
            started = time.monotonic()
            try:
                renewed = self.leases.renew(self.key, self.owner)
            except ZyncError:
                continue  # the database did not answer: the lease lapses unless a later renewal succeeds
            if self._stop.is_set():
                return
            if not renewed:
                self.holding.lose("another egress took it over")
                return
            self.holding.renewed(started)

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.holding.ttl_s)
        try:
            self.leases.release(self.key, self.owner)
        except ZyncError:
            pass  # the lease lapses after its TTL; nothing was produced after this pass's last report


def take(leases: Leases, topic: str, cluster: str, lock_file: Path, deadline: float,
         stop: threading.Event | None, ttl_s: float | None = None) -> HeldLease:
    """Take the lease of `topic` on `cluster`, waiting until `deadline` (monotonic) or `stop`.

    Raises EgressBusyError naming the holder when the wait ends without it.
    """
    ttl_s = lease_ttl() if ttl_s is None else ttl_s
    key, domain = lease_key(cluster, topic), lock_domain(lock_file)
    owner = owner_name(domain)
    name = f"{topic} on Kafka cluster {cluster}"
    waited_since = time.monotonic()
    while True:
        started = time.monotonic()
        if leases.acquire(key, name, owner, ttl_s):
            break
        holder = leases.holder(key)
        if (holder is not None and owner_domain(holder[0]) == domain
                and leases.take_from(key, holder[0], owner, ttl_s)):
            break  # its holder took turns by the lock file this process holds now: it is gone
        if time.monotonic() > deadline or (stop is not None and stop.is_set()):
            who = (f"{shown_owner(holder[0])}, renewed {holder[1]:.0f} s ago" if holder is not None
                   else "it was just given back")
            raise EgressBusyError(
                f"another egress of {topic} holds the topic's lease ({who}); waited "
                f"{time.monotonic() - waited_since:.0f} s; a lease not renewed for {ttl_s:.0f} s "
                f"({TTL_ENV}) is taken over; egress tries again")
        time.sleep(POLL_S)
    lease = HeldLease(leases, key, owner, Holding.taken(ttl_s, started))
    lease.start()
    return lease
