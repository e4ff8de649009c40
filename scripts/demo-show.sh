#!/usr/bin/env bash
# The demo proper, on a finished build (scripts/demo.sh builds first; the samples.demo test
# runs this on the test's build): what the registry holds, two processes moving data through
# the DAT API over the tcp provider, and Debian's unmodified dtest on OpenDAT.
#
#   scripts/demo-show.sh [<build dir>]      default: build/default
#
# Everything runs on loopback (IA ofa-v2-tcp-lo) from the build tree: OpenDAT's libdat2.so.2
# (LD_LIBRARY_PATH) and the build tree's dat.conf (DAT_OVERRIDE), which names the built
# providers by absolute path. Exit status 0 only when every step passed and verified its data.
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(cd "${1:-build/default}" && pwd)
export DAT_OVERRIDE="$build/conf/dat.conf"
export LD_LIBRARY_PATH="$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
ia=ofa-v2-tcp-lo
work=$(mktemp -d)
pids=()
cleanup() {
  for p in ${pids[@]+"${pids[@]}"}; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
failed=0
fail() { echo "FAILED: $*"; failed=1; }
indent() { sed 's/^/   /'; }

# Whether a socket listens on TCP port $1 (state 0A in /proc/net/tcp{,6}), without connecting.
listening() {
  local hex
  hex=$(printf '%04X' "$1")
  grep -qiE "^ *[0-9]+: [0-9A-F]+:$hex [0-9A-F]+:0000 0A" /proc/net/tcp /proc/net/tcp6 2>/dev/null
}
# A TCP port nobody listens on now, for the samples' connection qualifier (the tcp provider's
# qualifier is the port): another program, or another run of this demo, may hold the default.
free_port() {
  local p
  for p in $(seq 18515 18615); do listening "$p" || { echo "$p"; return; }; done
  echo 18515
}

# Runs "<sample> <args>" as server (-p port) and, once it listens, as client (-h 127.0.0.1);
# prints both sides' output; status 0 when both ended with status 0.
pair() {
  local exe=$build/samples/$1
  shift
  local port
  port=$(free_port)
  timeout 60 "$exe" -p "$port" "$ia" >"$work/server.out" 2>&1 &
  local srv=$!
  pids+=("$srv")
  for _ in $(seq 200); do
    listening "$port" && break
    kill -0 "$srv" 2>/dev/null || break
    sleep 0.05
  done
  local crc=0 src=0
  timeout 60 "$exe" -h 127.0.0.1 -p "$port" "$@" "$ia" >"$work/client.out" 2>&1 || crc=$?
  wait "$srv" || src=$?
  indent <"$work/server.out"
  indent <"$work/client.out"
  [ "$crc" = 0 ] && [ "$src" = 0 ]
}
# Whether file $1 has a line matching the extended regular expression $2.
has() { grep -qE "$2" "$1"; }

echo
echo "== 1. The registry: the build-tree dat.conf, each IA opened as its entry says"
grep -v '^#' "$DAT_OVERRIDE" | grep -v '^$' | indent
if ! "$build/samples/registry_demo" >"$work/registry.out" 2>&1; then
  fail "registry_demo: an IA did not open"
fi
# The listing, and for each IA what dat_ia_query reports (provider-specific attributes left
# out here: `build/default/samples/registry_demo` shows them all).
grep -vE '^      ' "$work/registry.out" | indent

echo
echo "== 2. Two processes move data through the DAT API (tcp provider, IA $ia)"
echo "-- rdma_rw: RMR triplets exchanged by send, then RDMA write and RDMA read of 4 MiB, verified"
pair rdma_rw -s 4194304 || fail "rdma_rw"
has "$work/server.out" "RDMA write of 4194304 bytes arrived intact" || fail "rdma_rw: the server did not verify the write"
has "$work/client.out" "server's buffer: 4194304 bytes verified" || fail "rdma_rw: the client did not verify its read"
echo "-- pingpong: 2000 sends of 4 KiB echoed back, each echo compared with its ping"
pair pingpong -s 4096 -n 2000 || fail "pingpong"
has "$work/client.out" "2000 round trips of 4096 bytes, average round trip" || fail "pingpong: no figure"

echo
echo "== 3. Debian's unmodified dtest (dapl2-utils) on OpenDAT's libdat2 and tcp provider"
if [ ! -x /usr/bin/dtest ]; then
  fail "/usr/bin/dtest is missing (package dapl2-utils; scripts/install-deps.sh installs it)"
else
  # dtest's side channel is TCP port 15828 and its connection qualifier 45248: wait until
  # the server listens on the side channel before starting the client. Fixed ports: take
  # turns with the tests that run dtest (test/tcp/run_pair.sh takes the same lock).
  exec 9>/tmp/opendat-fixed-ports.lock
  flock -w 120 9 || true
  timeout 60 /usr/bin/dtest -P "$ia" -b 4096 -B 10 >"$work/dtest-server.out" 2>&1 &
  srv=$!
  pids+=("$srv")
  for _ in $(seq 200); do
    listening 15828 && break
    kill -0 "$srv" 2>/dev/null || break
    sleep 0.05
  done
  crc=0 src=0
  timeout 60 /usr/bin/dtest -P "$ia" -h 127.0.0.1 -b 4096 -B 10 >"$work/dtest-client.out" 2>&1 || crc=$?
  wait "$srv" || src=$?
  echo "   (the client's output, key lines; the server's verdict last)"
  grep -E 'Running as|CONNECTED|buffer contains|PingPong|RDMA write \(bi|Test Complete' \
    "$work/dtest-client.out" | sed 's/^[0-9]*:\{0,1\} *//' | indent
  grep -E 'Test Complete' "$work/dtest-server.out" | sed 's/^[0-9]*:\{0,1\} */server: /' | indent
  if [ "$crc" != 0 ] || [ "$src" != 0 ] ||
    ! has "$work/dtest-client.out" 'DAPL Test Complete. PASSED' ||
    ! has "$work/dtest-server.out" 'DAPL Test Complete. PASSED'; then
    fail "dtest (client status $crc, server status $src)"
    echo "-- dtest server:"; indent <"$work/dtest-server.out"
    echo "-- dtest client:"; indent <"$work/dtest-client.out"
  fi
fi

echo
if [ "$failed" = 0 ]; then
  echo "demo: every step passed; all data verified"
else
  echo "demo: FAILED (above)"
fi
exit $failed
