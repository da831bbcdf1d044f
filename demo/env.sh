# Sourced first by each demo's run.sh (as "$(dirname "$0")/../env.sh"): the demo runs from the
# repository root, whatever folder it was started from, with the project's venv (its zync and
# python) first on PATH.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$PWD/.venv/bin:$PATH"

# The PostgreSQL demos' own services, ports and warehouse, so that a demo never meets the default
# `local` state nor another demo's; each overridable by its variable.
# Usage: demo_services STATE_FOLDER KAFKA_PORT REGISTRY_PORT POSTGRES_PORT CONNECT_PORT CATALOG_PORT
demo_services() {
  export ZYNC_STATE_DIR="${ZYNC_STATE_DIR:-$PWD/.local/$1}"
  export ZYNC_KAFKA_PORT="${ZYNC_KAFKA_PORT:-$2}" ZYNC_REGISTRY_PORT="${ZYNC_REGISTRY_PORT:-$3}"
  export ZYNC_POSTGRES_PORT="${ZYNC_POSTGRES_PORT:-$4}" ZYNC_CONNECT_PORT="${ZYNC_CONNECT_PORT:-$5}"
  export ZYNC_CATALOG_PORT="${ZYNC_CATALOG_PORT:-$6}"
}

# A PostgreSQL demo's last words: its services keep running (to explore), and the command that stops them.
services_still_running() {
  echo
  echo "The services are still running (ZYNC_STATE_DIR=$ZYNC_STATE_DIR); stop them with:"
  echo "  ZYNC_STATE_DIR=$ZYNC_STATE_DIR ZYNC_KAFKA_PORT=$ZYNC_KAFKA_PORT ZYNC_REGISTRY_PORT=$ZYNC_REGISTRY_PORT \\"
  echo "  ZYNC_CATALOG_PORT=$ZYNC_CATALOG_PORT ZYNC_POSTGRES_PORT=$ZYNC_POSTGRES_PORT ZYNC_CONNECT_PORT=$ZYNC_CONNECT_PORT zync down"
}
