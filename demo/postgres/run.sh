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

echo; echo "=== step 1: tables and their first rows (Debezium's snapshot)"
step sql demo_source "$demo/sql/1-tables-and-snapshot.sql"
step sql postgres <(echo "create database demo_target")
step start
counts=("Invoices=2 InvoiceStatus=2" "Invoices=4 InvoiceStatus=3" "Invoices=4 InvoiceStatus=5"
        "Invoices=4 InvoiceStatus=8" "Invoices=7 InvoiceStatus=8")
files=("" 2-new-invoices 3-status-changes 4-payments 5-edit-and-delete)
for i in 0 1 2 3 4; do
  if [ "$i" -gt 0 ]; then
    echo; echo "=== step $((i + 1)): $demo/sql/${files[$i]}.sql"
    cat "$demo/sql/${files[$i]}.sql" | grep -v '^--'
    step sql demo_source "$demo/sql/${files[$i]}.sql"
  fi
  # shellcheck disable=SC2086
  step wait-records ${counts[$i]}
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
