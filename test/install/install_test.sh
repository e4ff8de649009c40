#!/usr/bin/env bash
# Installs the build tree into a scratch prefix, then builds a consumer program against it
# twice (find_package(DAT2) and pkg-config dat2) and runs both with the installed dat.conf.
#   install_test.sh <build dir> <source dir of the consumer> <scratch dir>
set -euo pipefail
# Output is matched with grep <<<"$out", not echo "$out" | grep -q: grep -q exits at the first
# match, echo then dies of SIGPIPE, and pipefail turned a found line into a failure.
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
  grep -q '^list_providers: DAT_SUCCESS' <<<"$out" || { echo "FAIL: $exe"; exit 1; }
  expected=$(awk '!/^#/ && NF && $2 ~ /^u/ && $4 ~ /^default/' "$conf" | wc -l)
  got=$(echo "$out" | grep -c '^entry ' || true)
  [ "$got" -eq "$expected" ] || { echo "FAIL: $exe listed $got entries, dat.conf has $expected"; exit 1; }
done
# Without DAT_OVERRIDE the relocated installation must find its own dat.conf.
trace=$(LD_LIBRARY_PATH="$libdir" DAT_TRACE_LEVEL=3 "$scratch/consumer_pc" 2>&1 >/dev/null)
grep -q "using config file $conf (installed (relocated))" <<<"$trace" ||
  { echo "FAIL: the installed libdat2 did not choose $conf:"; echo "$trace"; exit 1; }

# datinfo from the prefix, no DAT_OVERRIDE and no LD_LIBRARY_PATH: its RUNPATH finds the
# installed libdat2, which finds the installed dat.conf, which names the installed tcp
# provider; the IA opens.
out=$(env -u DAT_OVERRIDE -u LD_LIBRARY_PATH "$prefix/bin/datinfo" -P ofa-v2-tcp-lo) ||
  { echo "$out"; echo "FAIL: installed datinfo -P ofa-v2-tcp-lo"; exit 1; }
echo "$out"
for want in "file: $conf" "reason: installed (relocated)" "status: ok" \
            "library: $libdir/opendat/libopendat-tcp.so" "vendor_extension: 1.0"; do
  grep -qF "$want" <<<"$out" || { echo "FAIL: installed datinfo: no '$want'"; exit 1; }
done
out=$(env -u DAT_OVERRIDE -u LD_LIBRARY_PATH "$prefix/bin/datinfo")
tcp_entries=$(grep -c 'libopendat-tcp.so' "$conf")
opened=$(echo "$out" | grep -c 'status: ok' || true)
[ "$opened" -ge "$tcp_entries" ] ||
  { echo "$out"; echo "FAIL: installed datinfo opened $opened entries, dat.conf has $tcp_entries tcp entries"; exit 1; }

# The installed sample sources build on their own with find_package(DAT2) (the samples and
# the example provider); further down, with the pkg-config one-liner of each sample's header.
samples="$prefix/share/doc/opendat/samples"
cmake -S "$samples" -B "$scratch/samples-build" -DCMAKE_PREFIX_PATH="$prefix" >"$scratch/samples.log"
cmake --build "$scratch/samples-build" >>"$scratch/samples.log" ||
  { cat "$scratch/samples.log"; echo "FAIL: building the installed samples with find_package(DAT2)"; exit 1; }
# Server + client of an installed-and-built sample, with the installed dat.conf.
wait_listening() {  # port: until some socket listens on it (no connection is made)
  local hex; hex=$(printf ':%04X' "$1")
  for _ in $(seq 200); do
    awk -v p="$hex" '$4 == "0A" && substr($2, length($2) - 4) == p {f = 1} END {exit !f}' \
      /proc/net/tcp /proc/net/tcp6 && return 0
    sleep 0.05
  done
  return 1
}
run_pair() {  # exe client-args...
  local exe="$1"; shift
  local port; port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  env -u DAT_OVERRIDE LD_LIBRARY_PATH="$libdir" timeout 60 "$exe" -p "$port" >"$scratch/server.out" 2>&1 &
  local server=$!
  wait_listening "$port" || { cat "$scratch/server.out"; echo "FAIL: $exe server does not listen"; exit 1; }
  env -u DAT_OVERRIDE LD_LIBRARY_PATH="$libdir" timeout 60 "$exe" -h 127.0.0.1 -p "$port" "$@" \
    >"$scratch/client.out" 2>&1 || { cat "$scratch/client.out" "$scratch/server.out"; echo "FAIL: $exe client"; exit 1; }
  wait "$server" || { cat "$scratch/server.out"; echo "FAIL: $exe server"; exit 1; }
  cat "$scratch/server.out" "$scratch/client.out"
}
run_pair "$scratch/samples-build/pingpong" -n 100
grep -q "100 round trips of 64 bytes" "$scratch/client.out" || { echo "FAIL: pingpong output"; exit 1; }

# The example provider built out of tree, loaded by the installed datinfo.
printf 'example u2.0 nonthreadsafe default %s example.1.0 "installed-example" ""\n' \
  "$scratch/samples-build/example_provider/libopendat-example.so" >"$scratch/example.conf"
out=$(DAT_OVERRIDE="$scratch/example.conf" "$prefix/bin/datinfo" -P example) ||
  { echo "$out"; echo "FAIL: datinfo -P example"; exit 1; }
grep -q "adapter_name: installed-example" <<<"$out" || { echo "$out"; echo "FAIL: example provider"; exit 1; }

# pkg-config must describe this prefix, not the one configured: otherwise the one-liners
# silently build against whatever is installed there (on Debian: libdapl-dev's headers and
# DAPL's libdat2.so), and programs using OpenDAT's additions (<dat2/dat_trace.h>) fail.
pc_includedir=$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --variable=includedir dat2)
[ "$(realpath -m "$pc_includedir")" = "$(realpath "$prefix/include")" ] || {
  echo "FAIL: $libdir/pkgconfig/dat2.pc says includedir=$pc_includedir, not $prefix/include:"
  echo "      dat2.pc keeps the configure-time prefix (cmake/dat2.pc.in) after cmake --install --prefix"
  exit 1; }
mkdir -p "$scratch/samples-pc"
for s in registry_demo rdma_rw add_ints pingpong trace_tuning delayed_ack; do
  cc -std=c11 -Wall -Wextra -Werror -o "$scratch/samples-pc/$s" "$samples/$s.c" \
    $(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs dat2) ||
    { echo "FAIL: building $s with pkg-config"; exit 1; }
done

run_pair "$scratch/samples-pc/add_ints" -a 40 -b 2
grep -q "client: 40 + 2 = 42 (correct)" "$scratch/client.out" || { echo "FAIL: add_ints output"; exit 1; }
# dat2.pc's datconf names the dat.conf this prefix installed, not the configure-time one.
pc_datconf=$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --variable=datconf dat2)
[ "$(realpath -m "$pc_datconf")" = "$(realpath "$conf")" ] ||
  { echo "FAIL: dat2.pc says datconf=$pc_datconf, not $conf"; exit 1; }

# Installing again keeps the operator's dat.conf: unchanged, nothing new is written; edited
# (README: "add an entry for the verbs provider to dat.conf"), it stays as edited and this
# build's goes next to it as dat.conf.new.
cmake --install "$build" --prefix "$prefix" >"$scratch/reinstall.log"
test ! -e "$conf.new" || { echo "FAIL: an unchanged dat.conf gave a dat.conf.new"; exit 1; }
cp "$conf" "$scratch/dat.conf.orig"
echo 'ofa-v2-ib0 u2.0 nonthreadsafe default libopendat-verbs.so opendat.2.0 "ib0 0" ""' >>"$conf"
cmake --install "$build" --prefix "$prefix" >"$scratch/reinstall.log"
grep -q '^ofa-v2-ib0 ' "$conf" ||
  { cat "$scratch/reinstall.log"; echo "FAIL: cmake --install overwrote the edited $conf"; exit 1; }
cmp -s "$scratch/dat.conf.orig" "$conf.new" ||
  { echo "FAIL: this build's dat.conf was not written to $conf.new"; exit 1; }
grep -q "Keeping: $conf" "$scratch/reinstall.log" ||
  { cat "$scratch/reinstall.log"; echo "FAIL: the install did not say it kept $conf"; exit 1; }

echo "install test passed"
