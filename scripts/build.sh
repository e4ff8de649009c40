#!/usr/bin/env bash
# Configures and builds one CMake preset (default: "default") into build/<preset>.
set -euo pipefail
preset="${1:-default}"
cd "$(dirname "$0")/.."
cmake --preset "$preset" -G Ninja >/dev/null
cmake --build --preset "$preset" -j "$(nproc)"
