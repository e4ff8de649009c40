#!/usr/bin/env bash
# Installs the build tree into a scratch prefix, then builds a consumer program against it
# twice (find_package(DAT2) and pkg-config dat2) and runs both with the installed dat.conf.
#   install_test.sh <build dir> <source dir of the consumer> <scratch dir>
set -euo pipefail
build="$1"; consumer_src="$2"; scratch="$3"
rm -rf "$scratch"; mkdir -p "$scratch"
prefix="$scratch/prefix"

cmake --install "$build" --prefix "$prefix" >"$scratch/install.log"
libdir=$(dirname "$(find "$prefix" -name libdat2.so.2 | head -n1)")
conf="$prefix/etc/dat.conf"
test -f "$libdir/libdat2.so.2" || { echo "FAIL: libdat2.so.2 not installed"; exit 1; }
test -f "$prefix/include/dat2/udat.h" || { echo "FAIL: headers not installed"; exit 1; }
test -f "$conf" || { echo "FAIL: dat.conf not installed"; exit 1; }
test -f "$libdir/pkgconfig/dat2.pc" || { echo "FAIL: dat2.pc not installed"; exit 1; }
readelf -d "$libdir/libdat2.so.2" | grep -q 'SONAME.*\[libdat2.so.2\]' || { echo "FAIL: SONAME"; exit 1; }
# Every provider the installed dat.conf names must exist where it says.
awk '!/^#/ && NF {print $5}' "$conf" | while read -r lib; do
  test -f "$lib" || { echo "FAIL: dat.conf names missing $lib"; exit 1; }
done

# 1. CMake package
cmake -S "$consumer_src" -B "$scratch/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" >"$scratch/cmake.log"
cmake --build "$scratch/cmake-build" >>"$scratch/cmake.log"
# 2. pkg-config
PKG_CONFIG_PATH="$libdir/pkgconfig" cc -Wall -Werror -o "$scratch/consumer_pc" \
  "$consumer_src/consumer.c" $(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs dat2)

for exe in "$scratch/cmake-build/consumer_cmake" "$scratch/consumer_pc"; do
  out=$(LD_LIBRARY_PATH="$libdir" DAT_OVERRIDE="$conf" "$exe")
  echo "$out"
  echo "$out" | grep -q '^list_providers: DAT_SUCCESS' || { echo "FAIL: $exe"; exit 1; }
  expected=$(awk '!/^#/ && NF && $2 ~ /^u/ && $4 ~ /^default/' "$conf" | wc -l)
  got=$(echo "$out" | grep -c '^entry ' || true)
  [ "$got" -eq "$expected" ] || { echo "FAIL: $exe listed $got entries, dat.conf has $expected"; exit 1; }
done
# Without DAT_OVERRIDE the relocated installation must find its own dat.conf.
trace=$(LD_LIBRARY_PATH="$libdir" DAT_TRACE_LEVEL=3 "$scratch/consumer_pc" 2>&1 >/dev/null)
echo "$trace" | grep -q "using config file $conf (installed (relocated))" ||
  { echo "FAIL: the installed libdat2 did not choose $conf:"; echo "$trace"; exit 1; }
echo "install test passed"
