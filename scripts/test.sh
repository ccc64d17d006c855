#!/usr/bin/env bash
# The one command that runs the whole suite: lint, typecheck, unit, integration and end-to-end tests.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"

# The PSE browser test drives Debian's Chromium with playwright-core (no browser download).
if [ -z "${CHROMIUM_PATH:-}" ] && ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "» installing Debian's chromium for the browser test…"
    (DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium >/dev/null 2>&1 \
      || { apt-get update >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium >/dev/null 2>&1; }) \
      || echo "could not install chromium; the browser test will fail until CHROMIUM_PATH points to a Chromium" >&2
  fi
fi
exec tsx scripts/test.ts "$@"
