"""Which files a compaction rewrites, as pure logic: each byte a few times at most, whatever the table's age.

The files a compaction replaces stay on disk until VACUUM's retention has passed, so what a table
costs on disk is the bytes it appended plus every byte compactions wrote within the retention.
The simulation applies Delta OPTIMIZE's own rules (files under minFileSize, per partition, in bins of
at most maxFileSize; a bin of one file is left as it is) to a table appended to for a long time.
"""

from __future__ import annotations

import math
import random

from service.compaction import MAX_FILE_BYTES, MIN_FILE_BYTES, compaction_bound, tier_bound

KB = 1024


def test_the_smallest_files_are_taken_while_they_outweigh_the_next():
    assert tier_bound([]) == MIN_FILE_BYTES
    assert tier_bound([KB] * 50) == MIN_FILE_BYTES  # a run of equal small files: all of them
    assert tier_bound([4 * 1024 * KB] + [KB] * 50) == 4 * 1024 * KB  # 50 KB does not rewrite 4 MB
    assert tier_bound([40 * KB] + [KB] * 50) == MIN_FILE_BYTES  # 50 KB rewrites 40 KB into 90 KB
    assert tier_bound([KB, 3 * KB, 3 * KB]) == MIN_FILE_BYTES  # the two 3 KB files, the 1 KB one with them
    assert tier_bound([KB, 3 * KB, 3 * KB, 20 * KB]) == 20 * KB  # ties stay together
    assert tier_bound([KB, 3 * KB]) == 3 * KB  # 4 KB would not be 1.5x the 3 KB file: the 1 KB file alone
    assert tier_bound([KB, 4 * 1024 * KB]) == 4 * 1024 * KB  # one new small file does not rewrite 4 MB
    assert tier_bound([MIN_FILE_BYTES, MIN_FILE_BYTES + 1]) == MIN_FILE_BYTES


def test_one_small_file_does_not_hold_back_the_larger_ones_after_it():
    # An output's `out` partition as a soak left it: its first run's file, then ~175 runs' files of
    # 10-26 KB. Stopping at the first jump (3.8 KB, then 9.5 KB) took the first file alone, a bin of
    # one that OPTIMIZE leaves: that partition was never compacted and grew by a file every run.
    rng = random.Random(7)
    out = [3890, 9770] + [rng.randint(12 * KB, 26 * KB) for _ in range(175)]
    assert tier_bound(out) == MIN_FILE_BYTES
    assert compaction_bound({("out",): out, ("done",): [rng.randint(6 * KB, 11 * KB) for _ in range(45)],
                             ("cursor",): [3413] * 45}) == MIN_FILE_BYTES


def test_a_table_takes_its_lowest_partition_bound():
    assert compaction_bound({}) == MIN_FILE_BYTES
    assert compaction_bound({("out",): [KB] * 10, ("done",): [4 * 1024 * KB, KB]}) == 4 * 1024 * KB
    assert compaction_bound({(): [100 * KB, KB]}) == 100 * KB


def _optimize(files: list[tuple[int, int]], min_file_bytes: int) -> list[tuple[int, int]]:
    """Delta's bin-packing of one partition's (size, rewrites) files; the files it wrote."""
    candidates = sorted(f for f in files if f[0] < min_file_bytes)
    bins, current = [], []
    for f in candidates:
        if current and sum(s for s, _ in current) + f[0] > MAX_FILE_BYTES:
            bins.append(current)
            current = []
        current.append(f)
    bins.append(current)
    written = []
    for b in bins:
        if len(b) < 2:
            continue
        for f in b:
            files.remove(f)
        merged = (sum(s for s, _ in b), max(r for _, r in b) + 1)
        files.append(merged)
        written.append(merged)
    return written


def _age(bound_of, appends: int, every: int, seed: int) -> tuple[int, int, int, int]:
    """(bytes appended, bytes compactions wrote, most rewrites of a byte, files live) after `appends`."""
    rng = random.Random(seed)
    partitions: dict[str, list[tuple[int, int]]] = {"out": [], "done": []}
    appended = written = 0
    for n in range(1, appends + 1):
        for files in partitions.values():
            size = rng.randint(KB, 8 * KB)
            files.append((size, 0))
            appended += size
        if n % every == 0:
            bound = bound_of({p: [s for s, _ in files] for p, files in partitions.items()})
            for files in partitions.values():
                written += sum(s for s, _ in _optimize(files, bound))
    most = max(r for files in partitions.values() for _, r in files)
    return appended, written, most, max(len(files) for files in partitions.values())


def test_each_byte_is_rewritten_a_few_times_however_long_the_table_lives():
    bound = math.log(MIN_FILE_BYTES / KB, 1.5)  # a rewrite makes a file at least 1.5 times larger
    for appends in (500, 5_000, 20_000):
        appended, written, most, live = _age(compaction_bound, appends, 50, seed=appends)
        assert most <= bound, (appends, most)
        assert written <= 4 * appended, (appends, written / appended)
        # the files left: those that reached MIN_FILE_BYTES, a short series of growing sizes, the newest appends
        assert live <= appended / 2 / MIN_FILE_BYTES + bound + 50, (appends, live)


def test_rewriting_every_small_file_each_time_writes_bytes_quadratic_in_the_table_age():
    # What the tier bound replaces: OPTIMIZE's own rule, every file under MIN_FILE_BYTES each time.
    everything = lambda partitions: MIN_FILE_BYTES  # noqa: E731
    appended, written, most, _ = _age(everything, 5_000, 50, seed=1)
    tiered_appended, tiered_written, tiered_most, _ = _age(compaction_bound, 5_000, 50, seed=1)
    assert appended == tiered_appended
    assert written > 25 * appended and most > 50  # a week's retention keeps all of it on disk
    assert tiered_written < 4 * appended and tiered_most < 8


def test_tables_created_together_are_due_at_commits_of_their_own():
    from service.compaction import compaction_due_after

    names = [f"zync.raw_pg_public_table_{i}" for i in range(50)]
    thresholds = [compaction_due_after(n, 50) for n in names]
    assert all(38 <= t <= 50 for t in thresholds)  # never later than --compact-after, at most a quarter sooner
    assert len(set(thresholds)) >= 8  # spread: not one cycle for all of them
    assert thresholds == [compaction_due_after(n, 50) for n in names]  # the same for a table every time
    # Thresholds too small to spread are kept as they are (the suite's --compact-after 1 and 2).
    assert {compaction_due_after(n, k) for n in names for k in (1, 2, 3)} == {1, 2, 3}
    assert {compaction_due_after(n, 1) for n in names} == {1}
