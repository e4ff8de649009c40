#!/usr/bin/env bash
# README command 2: install dependencies, build, and run every test.
#   scripts/test.sh              default build + all tests, then the asan and ubsan builds
#   OPENDAT_SANITIZERS="" scripts/test.sh   only the default build
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh

sanitizers="${OPENDAT_SANITIZERS-asan ubsan}"
status=0
for preset in default $sanitizers; do
  echo "==== preset $preset: build"
  bash scripts/build.sh "$preset"
  echo "==== preset $preset: test"
  if ! ctest --preset "$preset" --timeout 600; then
    status=1
  fi
done
exit $status
