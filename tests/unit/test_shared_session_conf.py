"""shared_session_conf: threads in blocks that want the same session settings never take them from each other."""

from __future__ import annotations

import threading
from types import SimpleNamespace

from zync.spark import shared_session_conf


class Conf:
    """A SparkSession's conf as far as the settings go: get with a default, set, unset."""

    def __init__(self, **values: str):
        self.values = dict(values)

    def get(self, key, default=None):
        return self.values.get(key, default)

    def set(self, key, value):
        self.values[key] = value

    def unset(self, key):
        self.values.pop(key, None)


def test_settings_hold_until_the_last_block_leaves_then_what_was_there_comes_back():
    spark = SimpleNamespace(conf=Conf(codec="snappy"))
    settings = {"codec": "zstd", "dictionary": "false"}
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen = []

    def first():
        with shared_session_conf(spark, settings):
            first_in.set()
            second_in.wait()
        first_out.set()

    def second():
        first_in.wait()
        with shared_session_conf(spark, settings):
            second_in.set()
            first_out.wait()
            # The first block has left: a plain set-and-restore would have put snappy back under this one.
            seen.append(dict(spark.conf.values))

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert seen == [{"codec": "zstd", "dictionary": "false"}]
    assert spark.conf.values == {"codec": "snappy"}
