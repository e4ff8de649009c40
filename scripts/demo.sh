#!/usr/bin/env bash
# README command 1: install dependencies, build, and show the registry at work.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh default

build=build/default
echo
echo "== The build-tree dat.conf (written by the build; providers named by absolute path)"
cat "$build/conf/dat.conf"
echo
echo "== registry_demo: lists the registry's entries and opens each IA through libdat2"
"$build/samples/registry_demo"
echo
echo "== The unmodified Debian dtest, running on our libdat2.so.2, asking for an unknown IA"
if [ -x /usr/bin/dtest ]; then
  LD_LIBRARY_PATH="$PWD/$build/lib" /usr/bin/dtest -P no-such-ia 2>&1 | sed 's/^/   /' || true
fi
