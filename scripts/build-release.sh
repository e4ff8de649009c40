#!/usr/bin/env bash
# Builds OpenDAT the way a user or a Debian packager does, with warnings as errors: CMake's
# Release type (-O3) on top of Debian's packaging flags (dpkg-buildflags: -O2 -g
# -fstack-protector-strong -D_FORTIFY_SOURCE=2 -Wformat -Werror=format-security, relro...),
# which let GCC see more than our presets' RelWithDebInfo (stringop-truncation and friends).
#
#   scripts/build-release.sh [<build dir>]      default: build/release
#
# Like debhelper's cmake build system, it adds CPPFLAGS to CFLAGS and CXXFLAGS (CMake itself
# does not read CPPFLAGS). The flags are taken only when the build folder is configured the
# first time; delete the folder to change them.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build/release}"
if command -v dpkg-buildflags >/dev/null 2>&1; then
  cppflags=$(dpkg-buildflags --get CPPFLAGS)
  CFLAGS="$(dpkg-buildflags --get CFLAGS) $cppflags"
  CXXFLAGS="$(dpkg-buildflags --get CXXFLAGS) $cppflags"
  LDFLAGS=$(dpkg-buildflags --get LDFLAGS)
  # GCC 12's -Wrestrict misfires inside libstdc++'s std::string at -O3 (GCC bug 105329):
  # it stays a warning, so the build still shows it, but it does not fail the check.
  CXXFLAGS="$CXXFLAGS -Wno-error=restrict"
  export CFLAGS CXXFLAGS LDFLAGS
  echo "build-release: CXXFLAGS=$CXXFLAGS -O3 -DNDEBUG; LDFLAGS=$LDFLAGS"
else
  echo "build-release: no dpkg-buildflags here; plain Release flags"
fi
gen=()
command -v ninja >/dev/null 2>&1 && [ ! -f "$build/CMakeCache.txt" ] && gen=(-G Ninja)
if [ "${OPENDAT_CCACHE:-1}" != 0 ] && command -v ccache >/dev/null 2>&1; then
  gen+=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DOPENDAT_WERROR=ON >/dev/null
cmake --build "$build" -j "$(nproc)" -- -k 0
