#!/usr/bin/env bash
# README command 1: install dependencies, build, and show OpenDAT at work
# (scripts/demo-show.sh: the registry, data moved between two processes, Debian's dtest).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
build=build/default
log=build/demo-build.log
mkdir -p build
echo "build: cmake --preset default (log: $log)"
started=$SECONDS
if ! bash scripts/build.sh default >"$log" 2>&1; then
  tail -n 40 "$log"
  echo "build: FAILED (the whole log: $log)"
  exit 1
fi
echo "build: done in $((SECONDS - started)) s"
exec bash scripts/demo-show.sh "$build"
