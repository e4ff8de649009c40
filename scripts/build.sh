#!/usr/bin/env bash
# Configures and builds one CMake preset (default: "default") into build/<preset>; further
# arguments go to CMake's configure step (e.g. -DOPENDAT_VM_TESTS=ON).
# With ccache installed, compiles go through it (OPENDAT_CCACHE=0 turns that off).
set -euo pipefail
preset="${1:-default}"
shift || true
cd "$(dirname "$0")/.."
launcher=()
if [ "${OPENDAT_CCACHE:-1}" != 0 ] && command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
cmake --preset "$preset" -G Ninja "${launcher[@]}" "$@" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)"
