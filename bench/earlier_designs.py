"""Earlier designs of `zync run`, put back in a benchmark's process to measure the current one against.

    restore_output_run()  # before egress checked the topic's last record in its pass's own job, and
                          # before zync run turned the output post-hook's count off

bench/latency.py's zync-run-before design starts `zync run` with it.
"""

from __future__ import annotations


def restore_output_run() -> None:
    """Every run of an output counts what it wrote (the post-hook's query); every egress pass reads the
    out row at the topic's last offset by a Spark query of its own before its publishing job."""
    from pyspark.sql import functions as F

    import service.run
    from egress.to_kafka import Egress
    from zync.errors import ZyncError

    service.run.RUN_VARIABLES = {}
    batches_of = Egress._batches

    def _batches(self, encoded, pending):
        self._encoded_rows = encoded  # for the query below (_batches' generator has not started yet)
        return batches_of(self, encoded, pending)

    def _after_last_published(self, batches, start: int):
        if start > 0:
            found = self._encoded_rows.where(F.col("offset") == start - 1).select("k", "v").collect()
            if len(found) != 1:
                raise ZyncError(self._not_contiguous(f"{len(found)} out rows at offset {start - 1}"))
            self._check_last_published(start - 1, found[0]["k"], found[0]["v"])
        first = start > 0  # the pass's job also carries that row: skipped, as it is checked
        try:
            for batch in batches:
                if first:
                    first, batch = False, batch.slice(1)
                    if batch.num_rows == 0:
                        continue
                yield batch
        finally:
            batches.close()

    Egress._batches = _batches
    Egress._after_last_published = _after_last_published
