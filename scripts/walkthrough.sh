#!/usr/bin/env bash
# A full purchase against the stack of `npm run dev`: runs README.md's walk-through (its ```bash walkthrough blocks,
# in order) as one script, so the README and this script cannot drift apart. `--print` prints the script instead.
# test/e2e/readme-walkthrough.test.ts runs the same blocks against the test stack.
set -euo pipefail
cd "$(dirname "$0")/.."
script=$(awk '
  /^```bash walkthrough[[:space:]]*$/ { inside = 1; next }
  inside && /^```[[:space:]]*$/ { inside = 0; print ""; next }
  inside { print }
' README.md)
if [ -z "$script" ]; then
  echo "README.md has no \`\`\`bash walkthrough blocks" >&2
  exit 1
fi
if [ "${1:-}" = --print ]; then
  printf '%s\n' "$script"
  exit 0
fi
exec bash -euo pipefail -c "$script" walkthrough
