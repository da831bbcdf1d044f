# Sourced by the PostgreSQL demos' run.sh: when the demo ends, stop its `zync run` (pid $run_pid, if
# any); on failure also its services, saying so in one line so that the error stays right above it.
# Uses the caller's $demo_name, $run_pid and $log.
run_pid=
finish() {
  local status=$?
  if [ -n "$run_pid" ]; then kill -TERM "$run_pid" 2>/dev/null || true; wait "$run_pid" || true; fi
  if [ "$status" -ne 0 ]; then
    zync down >/dev/null 2>&1 || true
    echo "$demo_name failed (exit $status, the error is above); its services are stopped" \
         "(ZYNC_STATE_DIR=$ZYNC_STATE_DIR${run_pid:+; the log of zync run: $log})" >&2
  fi
  exit "$status"
}
trap finish EXIT
