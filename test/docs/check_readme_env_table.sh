#!/usr/bin/env bash
# README.md's "Environment variables" table names each variable once: a second row (as
# DAT_TCP_WIRE_VERSION once had, with a different wording) leaves the reader wondering
# which one is right.
#   check_readme_env_table.sh <source dir>
set -euo pipefail
readme="$1/README.md"
names=$(awk '/^## Environment variables/{t=1; next} /^## /{t=0} t && /^\| `/' "$readme" |
        sed -E 's/^\| `([^`]+)`.*/\1/' | tr -s ' /`' '\n' | grep -E '^[A-Z][A-Z0-9_]+$' || true)
[ -n "$names" ] || { echo "FAIL: no variable rows found in $readme"; exit 1; }
dups=$(sort <<<"$names" | uniq -d)
[ -z "$dups" ] || { echo "FAIL: README.md lists these variables more than once:"; echo "$dups"; exit 1; }
echo "README environment table: $(wc -l <<<"$names") variables, each once"
