#!/usr/bin/env bash
# zync's invoices demo on the embedded stack, with the real commands a user runs:
# `zync run` keeps running while each batch of Debezium events is produced to
# Kafka; it ingests them into raw Delta tables, runs the dbt models and
# publishes to NewInvoices; the demo waits for the batch's output and prints
# the whole NewInvoices stream with the time from produce to output.
set -euo pipefail
source "$(dirname "$0")/../env.sh"
demo=demo/invoices

# The demo runs on its own embedded services, ports and warehouse, started
# afresh, so it can be run again and never touches the default `local` state
# (ZYNC_DEMO_* move them; its state folder is deleted first).
export ZYNC_STATE_DIR="${ZYNC_DEMO_STATE_DIR:-$PWD/.local/demo-state}"
export ZYNC_KAFKA_PORT="${ZYNC_DEMO_KAFKA_PORT:-19192}" ZYNC_REGISTRY_PORT="${ZYNC_DEMO_REGISTRY_PORT:-18181}"
export ZYNC_CATALOG_PORT="${ZYNC_DEMO_CATALOG_PORT:-11627}"
# The demo's models (models/*/demo/) are off unless asked for: a user's own run skips them.
export ZYNC_DEMO=true
zync down >/dev/null
rm -rf "$ZYNC_STATE_DIR"
zync up
zync etl compile

# One warm `zync run` moves every batch: ingest, `dbt run` of the models whose
# raw tables moved (new_invoices and the invoices mirror), publish. Its JSON log
# (one line per stage of each busy cycle) goes to the state folder.
log="$ZYNC_STATE_DIR/zync-run.log"
zync run 2>"$log" &
run_pid=$!
trap 'kill -TERM $run_pid 2>/dev/null; wait $run_pid 2>/dev/null' EXIT
echo "zync run started (pid $run_pid; its log: $log)"

for batch in 1 2 3 4; do
  echo
  echo "=== batch $batch"
  # NewInvoices' length after this batch in zync's own demo output.
  want=$(awk -v b="$batch" '/^=== /{n=$2} n==b && /^\{key:/{c++} END{print c}' $demo/zync-expected-staging-after-each-batch.txt)
  started=$(date +%s.%N)
  for topic in Invoices InvoiceStatus; do
    file="$demo/batch-$batch/$topic.jsonl"
    [ -f "$file" ] || continue
    zync produce --topic "$topic" \
      --key-schema "$demo/schemas/$topic-key.avsc" --value-schema "$demo/schemas/$topic-value.avsc" "$file"
  done
  python - "$want" "$run_pid" <<'PY'
import os, sys, time
from zync import kafka_client
from zync.config import load_target
want, pid, target = int(sys.argv[1]), int(sys.argv[2]), load_target(None)
deadline = time.monotonic() + 600
while not (kafka_client.topic_exists(target, "NewInvoices")
           and kafka_client.high_water_marks(target, "NewInvoices")[0] >= want):
    os.kill(pid, 0)  # zync run must still be running
    if time.monotonic() > deadline:
        sys.exit(f"NewInvoices did not reach {want} records in 10 minutes: see the zync run log")
    time.sleep(0.2)
PY
  echo "--- NewInvoices after batch $batch ($(python -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$started" "$(date +%s.%N)") s from produce to output, as this script saw it)"
  # What zync run measured itself: from each change's produce to Kafka to published.
  python demo/freshness.py --since "$started" --model new_invoices
  zync consume --topic NewInvoices --from-beginning --exit-after 1s
done

kill -TERM $run_pid
wait $run_pid || true
trap - EXIT
echo
echo "zync run stopped (SIGTERM: it finishes its step and exits 0). Its cycles:"
grep '"stage": "cycle"' "$log" || true

echo
echo "The demo's services are still running (ZYNC_STATE_DIR=$ZYNC_STATE_DIR, Kafka on"
echo "127.0.0.1:$ZYNC_KAFKA_PORT, catalog on 127.0.0.1:$ZYNC_CATALOG_PORT); with those variables set,"
echo "explore with zync and dbt (several at once: the catalog is shared), and stop them with:"
echo "ZYNC_STATE_DIR=$ZYNC_STATE_DIR ZYNC_KAFKA_PORT=$ZYNC_KAFKA_PORT ZYNC_REGISTRY_PORT=$ZYNC_REGISTRY_PORT ZYNC_CATALOG_PORT=$ZYNC_CATALOG_PORT zync down"
