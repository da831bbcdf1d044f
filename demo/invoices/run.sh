#!/usr/bin/env bash
# zync's invoices demo on the embedded stack, with the real commands a user runs:
# each batch of Debezium events is produced to Kafka, ingested into raw Delta
# tables, transformed by `dbt run`, published to NewInvoices, and the whole
# NewInvoices stream is printed.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PWD/.venv/bin:$PATH"
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

for batch in 1 2 3 4; do
  echo
  echo "=== batch $batch"
  for topic in Invoices InvoiceStatus; do
    file="$demo/batch-$batch/$topic.jsonl"
    [ -f "$file" ] || continue
    zync produce --topic "$topic" \
      --key-schema "$demo/schemas/$topic-key.avsc" --value-schema "$demo/schemas/$topic-value.avsc" "$file"
  done
  zync from-kafka --topic Invoices --topic InvoiceStatus --exit-after 2s
  dbt run --select new_invoices
  zync to-kafka --table new_invoices
  echo "--- NewInvoices after batch $batch"
  zync consume --topic NewInvoices --from-beginning --exit-after 2s
done

echo
echo "The demo's services are still running (ZYNC_STATE_DIR=$ZYNC_STATE_DIR, Kafka on"
echo "127.0.0.1:$ZYNC_KAFKA_PORT, catalog on 127.0.0.1:$ZYNC_CATALOG_PORT); with those variables set,"
echo "explore with zync and dbt (several at once: the catalog is shared), and stop them with:"
echo "ZYNC_STATE_DIR=$ZYNC_STATE_DIR ZYNC_KAFKA_PORT=$ZYNC_KAFKA_PORT ZYNC_REGISTRY_PORT=$ZYNC_REGISTRY_PORT ZYNC_CATALOG_PORT=$ZYNC_CATALOG_PORT zync down"
