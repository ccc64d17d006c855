#!/usr/bin/env bash
# Installs what the project needs and is missing, on a machine that has only Node (>= 22.17), npm and Go.
# Sourced by scripts/dev.sh and scripts/test.sh; safe to run repeatedly (each step is skipped when done).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

TEMPORAL_CLI_VERSION=v1.5.1
export TEMPORAL_BIN="${TEMPORAL_BIN:-$HOME/.cache/ticketing/temporal-$TEMPORAL_CLI_VERSION/temporal}"

ensure_node_modules() {
  # npm ci when the lockfile changed since the last install (or nothing is installed yet). TICKETING_SKIP_INSTALL=1
  # is for the smoke test, which runs this script from inside a test run that is using node_modules.
  if [ "${TICKETING_SKIP_INSTALL:-}" = "1" ] && [ -d node_modules ]; then return; fi
  if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    echo "» installing npm dependencies (npm ci)…"
    npm ci --no-audit --no-fund
  fi
}

ensure_temporal() {
  if [ -x "$TEMPORAL_BIN" ]; then return; fi
  if ! command -v go >/dev/null 2>&1; then
    echo "Go is needed once to build the Temporal dev server (https://go.dev/dl/), or set TEMPORAL_BIN to a temporal CLI binary." >&2
    exit 1
  fi
  echo "» building the Temporal CLI $TEMPORAL_CLI_VERSION with its web UI from source (first run only, a few minutes)…"
  mkdir -p "$(dirname "$TEMPORAL_BIN")"
  GOBIN="$(dirname "$TEMPORAL_BIN")" go install "github.com/temporalio/cli/cmd/temporal@$TEMPORAL_CLI_VERSION"
}

ensure_node_modules
ensure_temporal
# Node 24 from the `node` devDependency comes first, whatever Node the machine has.
export PATH="$ROOT/node_modules/.bin:$PATH"
