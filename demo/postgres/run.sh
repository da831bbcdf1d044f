#!/usr/bin/env bash
# The invoices demo on real systems: PostgreSQL tables changed with SQL ->
# Debezium's PostgreSQL connector -> Kafka -> zync (`zync run`: ingest, dbt,
# egress, in one warm process) -> NewInvoices -> Debezium's JDBC sink -> the
# table new_invoices of a second PostgreSQL database, printed after each step.
set -euo pipefail
source "$(dirname "$0")/../env.sh"
demo=demo/postgres

# Its own services, ports and warehouse, started afresh.
demo_services demo-postgres-state 19292 18281 15532 18283 11727
export ZYNC_DEMO=true   # the demo's transforms and models (demo/invoices/transforms)
step() { python "$demo/connectors.py" "$@"; }

demo_name=demo-postgres log="$ZYNC_STATE_DIR/zync-run.log"
source demo/finish.sh

zync down --purge >/dev/null
zync up --connect
zync etl compile

mapfile -t files < <(step steps)   # the steps' SQL files, in order (connectors.py STEPS)
step sql postgres <(echo "create database demo_target")
for i in "${!files[@]}"; do
  echo; echo "=== step $((i + 1)): ${files[$i]#"$PWD/"}"
  grep -v '^--' "${files[$i]}"
  stepped=$(date +%s.%N)
  step sql demo_source "${files[$i]}"
  if [ "$i" -eq 0 ]; then
    # Debezium starts after the first step's rows exist: they arrive as its snapshot (op 'r').
    step start
    # One warm zync process for every step: it ingests, runs the models (new_invoices and the
    # invoices mirror) and publishes as changes arrive. Its JSON log goes to a file.
    zync run >"$log" 2>&1 &
    run_pid=$!
    echo "zync run started (pid $run_pid, log $log)"
  fi
  step wait-records $((i + 1))
  # zync run publishes, the sink applies: until the sink's table equals the state PostgreSQL computes.
  step wait-target
  # What zync run measured itself: from each change's commit in PostgreSQL to published (the output)
  # or queryable (the mirror); the sink's own time to apply it is not in it.
  python demo/freshness.py --since "$stepped"
  echo "--- demo_target.new_invoices (written by Debezium's JDBC sink)"
  step show demo_target 'select * from new_invoices order by 1'
done
kill -TERM "$run_pid"; wait "$run_pid" || true; run_pid=
tail -n 1 "$log"

services_still_running
