#!/usr/bin/env bash
# `npm run temporal -- <args>`: the Temporal CLI that scripts/bootstrap.sh built for `npm run dev` (cached outside the
# repository, so it is not on PATH), pointed at the dev stack's server: TEMPORAL_ADDRESS when set, else
# 127.0.0.1:TEMPORAL_PORT (7233), the port `npm run dev` gives it. Example: npm run temporal -- workflow list.
set -euo pipefail
TEMPORAL_BIN="${TEMPORAL_BIN:-$HOME/.cache/ticketing/temporal-v1.5.1/temporal}"
if [ ! -x "$TEMPORAL_BIN" ]; then
  echo "The Temporal CLI is not built yet ($TEMPORAL_BIN): run npm run dev once, or set TEMPORAL_BIN." >&2
  exit 1
fi
export TEMPORAL_ADDRESS="${TEMPORAL_ADDRESS:-127.0.0.1:${TEMPORAL_PORT:-7233}}"
exec "$TEMPORAL_BIN" "$@"
