"""Another writer process of one Delta table on the S3 server, for tests/object_storage
(run: python -m tests.object_storage.appender LOCATION COUNT TAG).

It appends COUNT rows one commit at a time (blind appends, which Delta retries on a newer version
when another writer took theirs), then prints "done".
"""

from __future__ import annotations

import sys


def main() -> int:
    location, count, tag = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    from zync.config import load_target
    from zync.spark import spark_session

    spark = spark_session(load_target())
    print("ready", flush=True)
    sys.stdin.readline()  # both writers start appending together
    for i in range(count):
        spark.createDataFrame([(f"{tag}-{i}",)], "row string").write.format("delta").mode("append").save(location)
    print("done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
