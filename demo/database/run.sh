#!/usr/bin/env bash
# A whole database through one `zync run`: a shop's 20 PostgreSQL tables -> one Debezium connector ->
# Kafka -> zync run, mirroring every table from one mirror entry (`topics:`) -> a current-state Delta
# table per table. Then changes to every table, and a table created while it runs, mirrored live.
set -euo pipefail
source "$(dirname "$0")/../env.sh"
demo=demo/database

# Its own services, ports and warehouse, started afresh.
demo_services demo-database-state 19392 18381 15632 18383 11827
project="$ZYNC_STATE_DIR/shop-project"   # a user's project: the repository's dbt setup and one mirror file
step() { python "$demo/shop.py" "$@"; }
# What zync run measured itself since a step's start: from each change's commit in PostgreSQL to
# queryable in its mirror (demo/freshness.py).
measured() { ZYNC_PROJECT_DIR="$project" python demo/freshness.py "$@"; }

demo_name=demo-database log="$ZYNC_STATE_DIR/zync-run.log"
source demo/finish.sh

zync down --purge >/dev/null
zync up --connect
step project "$project"
echo "--- $project/transforms/shop.yml"; cat "$project/transforms/shop.yml"

echo; echo "=== 20 tables of 200 rows, captured by one connector"
step sql 1-tables-and-rows.sql
step start
started=$(date +%s)
ZYNC_PROJECT_DIR="$project" zync run >"$log" 2>&1 &
run_pid=$!
echo "zync run started (pid $run_pid, log $log); it compiles a mirror per topic as the topics appear"
step wait-mirrors
echo "every table mirrored in $(( $(date +%s) - started ))s (as this script saw it: the engine's start, the mirrors' first builds and its checks)"
measured --since "$started"

echo; echo "=== updates, deletes and inserts in every table"
step sql 2-changes.sql
changed=$(date +%s)
step wait-mirrors
echo "applied to every mirror in $(( $(date +%s) - changed ))s (as this script saw it: it checks every 5 s, table by table)"
measured --since "$changed"

echo; echo "=== a table created while it runs"
step sql 3-new-table.sql
created=$(date +%s)
step wait-mirrors
echo "gift_cards mirrored in $(( $(date +%s) - created ))s, without a restart (as this script saw it)"
measured --since "$created" --model gift_cards
grep -h '"new topics' "$log" | tail -n 1 || true

echo; echo "--- the generated mirrors (models/mirrors/ of the project): $(ls "$project/models/mirrors" | grep -c '\.sql$')"
kill -TERM "$run_pid"; wait "$run_pid" || true; run_pid=
tail -n 1 "$log"

services_still_running
