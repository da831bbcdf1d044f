#!/usr/bin/env bash
# The invoices demo on real systems: PostgreSQL tables changed with SQL ->
# Debezium's PostgreSQL connector -> Kafka -> zync (from-kafka, dbt run,
# to-kafka) -> NewInvoices -> Debezium's JDBC sink -> the table new_invoices
# of a second PostgreSQL database, printed after each step.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PWD/.venv/bin:$PATH"
demo=demo/postgres

# Its own services, ports and warehouse, started afresh (overridable).
export ZYNC_STATE_DIR="${ZYNC_STATE_DIR:-$PWD/.local/demo-postgres-state}"
export ZYNC_KAFKA_PORT="${ZYNC_KAFKA_PORT:-19292}" ZYNC_REGISTRY_PORT="${ZYNC_REGISTRY_PORT:-18281}"
export ZYNC_POSTGRES_PORT="${ZYNC_POSTGRES_PORT:-15532}" ZYNC_CONNECT_PORT="${ZYNC_CONNECT_PORT:-18283}"
export ZYNC_DEMO=true   # the demo's transforms and models (demo/invoices/transforms)
step() { python "$demo/connectors.py" "$@"; }

zync down >/dev/null
rm -rf "$ZYNC_STATE_DIR"
zync up --connect
zync etl compile

mapfile -t files < <(step steps)   # the steps' SQL files, in order (connectors.py STEPS)
step sql postgres <(echo "create database demo_target")
for i in "${!files[@]}"; do
  echo; echo "=== step $((i + 1)): ${files[$i]#"$PWD/"}"
  grep -v '^--' "${files[$i]}"
  step sql demo_source "${files[$i]}"
  # Debezium starts after the first step's rows exist: they arrive as its snapshot (op 'r').
  if [ "$i" -eq 0 ]; then step start; fi
  step wait-records $((i + 1))
  zync from-kafka --topic Invoices --topic InvoiceStatus --exit-after 2s
  dbt run --select new_invoices invoices_mirror --quiet
  zync to-kafka --table new_invoices
  step wait-sink
  echo "--- demo_target.new_invoices (written by Debezium's JDBC sink)"
  step show demo_target 'select * from new_invoices order by 1'
done

echo
echo "The services are still running (ZYNC_STATE_DIR=$ZYNC_STATE_DIR); stop them with:"
echo "  ZYNC_STATE_DIR=$ZYNC_STATE_DIR ZYNC_KAFKA_PORT=$ZYNC_KAFKA_PORT ZYNC_REGISTRY_PORT=$ZYNC_REGISTRY_PORT zync down"
