"""Another egress process, as on another machine, for tests/egress/test_lease.py.

python -m tests.egress.egress_process publish TABLE BATCH_SIZE
    makes an egress of TABLE, prints "ready", waits for a line on stdin, publishes one pass and
    prints how many records it produced;
python -m tests.egress.egress_process hold TOPIC CLUSTER
    takes TOPIC's turn on the Kafka cluster id CLUSTER (its file lock and its lease), prints
    "held" and holds it until killed.

Each takes turns by the file locks of its own $ZYNC_EGRESS_LOCK_DIR.
"""

from __future__ import annotations

import sys
import time


def main() -> int:
    from zync.config import load_target
    from zync.progress import Progress
    from zync.spark import spark_session

    target = load_target()
    mode = sys.argv[1]
    if mode == "publish":
        from egress.to_kafka import Egress

        egress = Egress(target, sys.argv[2], batch_size=int(sys.argv[3]))
        print("ready", flush=True)
        sys.stdin.readline()
        print(egress.publish_once(Progress("to-kafka", quiet=True)), flush=True)
        return 0
    from egress.lease import Leases
    from egress.to_kafka import topic_turn

    topic, cluster = sys.argv[2], sys.argv[3]
    leases = Leases(spark_session(target))
    with topic_turn(str(target.kafka.get("bootstrap.servers", "")), topic, leases=leases, cluster=cluster):
        print("held", flush=True)
        time.sleep(600)
    return 0


if __name__ == "__main__":
    sys.exit(main())
