#!/usr/bin/env bash
# The one command that starts everything: see README.md. Ctrl-C stops everything it started.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
exec tsx scripts/dev.ts "$@"
