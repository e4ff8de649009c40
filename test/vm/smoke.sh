#!/usr/bin/env bash
# Smoke test of the soft-RoCE VM: runs INSIDE the VM, e.g.
#   test/vm/run-in-vm.sh test/vm/smoke.sh
# It checks, on rxe0 (server and client on the same device and address):
#   1. the device: ibv_devices, ibv_devinfo -d rxe0, rdma link;
#   2. verbs: ibv_rc_pingpong (GID index 1), ib_write_bw at 64 KiB, ib_send_lat at 8 bytes;
#   3. rdma_cm: rping;
#   4. the reference DAT stack: Debian's own dtest (default, -p, -W), dtestcm and dapltest, over
#      Debian's libdat2.so.2 and libdaplofa.so.2 (the uDAPL cma provider), through a dat.conf
#      entry "ofa-v2-rxe u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 "dummy0 0" """.
# Each server/client pair has its own time limit. Output of every program goes to
# $OPENDAT_VM_SMOKE_OUT (default: a fresh folder under /tmp, the guest's tmpfs) and is printed.
# Exit status 0 when every step passed.
set -euo pipefail

ADDR=${OPENDAT_VM_SMOKE_ADDR:-192.168.77.1}   # dummy0's address in the VM (run-in-vm.sh)
DEV=rxe0
STEP_TIMEOUT=${OPENDAT_VM_SMOKE_STEP_TIMEOUT:-180}

if [ ! -e /sys/class/infiniband/$DEV ]; then
  echo "smoke.sh: no $DEV here; run it in the VM: test/vm/run-in-vm.sh test/vm/smoke.sh" >&2
  exit 1
fi

# The reference stack must be Debian's, not a build tree's libdat2 picked up by chance.
unset LD_LIBRARY_PATH LD_PRELOAD
out=${OPENDAT_VM_SMOKE_OUT:-$(mktemp -d /tmp/opendat-smoke.XXXXXX)}
mkdir -p "$out"

# DAT registry file naming the reference cma provider on dummy0.
export DAT_OVERRIDE="$out/dat.conf"
echo 'ofa-v2-rxe u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 "dummy0 0" ""' >"$DAT_OVERRIDE"
P=ofa-v2-rxe

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
passed=() failed=()
result() {  # name ok|fail seconds [detail]
  if [ "$2" = ok ]; then passed+=("$1"); printf '=== PASS %s (%ss)\n' "$1" "$3"
  else failed+=("$1"); printf '=== FAIL %s (%ss) %s\n' "$1" "$3" "${4:-}"
  fi
}
show() {  # label file: print a log with a prefix
  sed "s/^/  [$1] /" "$2"
}

# A single command.
run_one() {  # name command...
  local name=$1; shift
  local t0 rc=0; t0=$(now)
  printf '\n=== RUN %s: %s\n' "$name" "$*"
  timeout "$STEP_TIMEOUT" "$@" >"$out/$name.log" 2>&1 || rc=$?
  show out "$out/$name.log"
  if [ $rc -eq 0 ]; then result "$name" ok "$(since "$t0")"
  else result "$name" fail "$(since "$t0")" "(exit status $rc)"
  fi
}

# Wait until a server is ready: tcp:PORT (a TCP listener, e.g. a side channel) or cm (a
# listening rdma_cm id). Gives up after 60 s or when the server died.
wait_ready() {  # how server-pid
  local i
  for ((i = 0; i < 600; i++)); do
    case "$1" in
      tcp:*) [ -n "$(ss -Hltn "sport = :${1#tcp:}" 2>/dev/null)" ] && return 0 ;;
      cm) rdma resource show cm_id 2>/dev/null | grep -q LISTEN && return 0 ;;
    esac
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# A server and a client; both must exit with status 0.
run_pair() {  # name ready-check "server command" "client command"
  local name=$1 ready=$2 srv=$3 cli=$4
  local t0 spid src=0 crc=0 i; t0=$(now)
  printf '\n=== RUN %s\n  server: %s\n  client: %s\n' "$name" "$srv" "$cli"
  timeout "$STEP_TIMEOUT" bash -c "exec $srv" >"$out/$name.server.log" 2>&1 &
  spid=$!
  if ! wait_ready "$ready" "$spid"; then
    kill "$spid" 2>/dev/null || true; wait "$spid" 2>/dev/null || true
    show server "$out/$name.server.log"
    result "$name" fail "$(since "$t0")" "(server not ready: $ready)"
    return 0
  fi
  timeout "$STEP_TIMEOUT" bash -c "exec $cli" >"$out/$name.client.log" 2>&1 || crc=$?
  # The server ends by itself after one client; give it 30 s more, then stop it.
  for ((i = 0; i < 300; i++)); do kill -0 "$spid" 2>/dev/null || break; sleep 0.1; done
  kill "$spid" 2>/dev/null || true
  wait "$spid" || src=$?
  show server "$out/$name.server.log"
  show client "$out/$name.client.log"
  if [ $src -eq 0 ] && [ $crc -eq 0 ]; then result "$name" ok "$(since "$t0")"
  else result "$name" fail "$(since "$t0")" "(server status $src, client status $crc)"
  fi
}

t_all=$(now)
echo "smoke: kernel $(uname -r); results in $out"
echo "smoke: dtest uses $(ldd "$(command -v dtest)" | awk '/libdat2/ {print $3}'); provider $(grep -o 'libdaplofa[^ ]*' "$DAT_OVERRIDE")"

# 1. The device.
run_one devices     ibv_devices
run_one devinfo     ibv_devinfo -d $DEV
run_one rdma-link   rdma link show

# 2. Verbs (ibv_* and perftest need GID index 1: the RoCEv2 GID of the IPv4 address).
run_pair rc_pingpong tcp:18515 "ibv_rc_pingpong -d $DEV -g 1 -n 1000 -s 4096" \
                               "ibv_rc_pingpong -d $DEV -g 1 -n 1000 -s 4096 $ADDR"
run_pair write_bw    tcp:18515 "ib_write_bw -d $DEV -x 1 -F -s 65536 -n 500" \
                               "ib_write_bw -d $DEV -x 1 -F -s 65536 -n 500 $ADDR"
run_pair send_lat    tcp:18515 "ib_send_lat -d $DEV -x 1 -F -s 8 -n 1000" \
                               "ib_send_lat -d $DEV -x 1 -F -s 8 -n 1000 $ADDR"

# 3. rdma_cm.
run_pair rping cm "rping -s -a $ADDR -C 100" "rping -c -a $ADDR -C 100"

# 4. The reference DAT stack. dtest's default buffers (hundreds of MB registered) are too slow
# to register under TCG: -b 4096. dtest's side channel is TCP port 15828.
D="-P $P -b 4096 -B 10"
run_pair dtest       tcp:15828 "dtest $D"    "dtest $D -h $ADDR"
run_pair dtest-p     tcp:15828 "dtest $D -p" "dtest $D -p -h $ADDR"
run_pair dtest-W     tcp:15828 "dtest $D -W" "dtest $D -W -h $ADDR"
run_pair dtestcm     tcp:15828 "dtestcm -P $P -s -c 50" "dtestcm -P $P -c 50 -h $ADDR"
# dapltest: a server, then transaction and performance clients, then the quit client.
t0=$(now)
printf '\n=== RUN dapltest\n'
timeout "$STEP_TIMEOUT" dapltest -T S -D $P >"$out/dapltest.server.log" 2>&1 &
spid=$!
if wait_ready cm "$spid"; then
  rc=0
  timeout "$STEP_TIMEOUT" dapltest -T T -s "$ADDR" -D $P -i 10 -t 1 -w 1 -R BE \
    client SR 4096 server SR 4096 >"$out/dapltest.T.log" 2>&1 || rc=$?
  timeout "$STEP_TIMEOUT" dapltest -T P -s "$ADDR" -D $P -i 100 RW 4096 2 \
    >"$out/dapltest.P.log" 2>&1 || rc=$((rc ? rc : $?))
  timeout 60 dapltest -T Q -s "$ADDR" -D $P >"$out/dapltest.Q.log" 2>&1 || true
  src=0; wait "$spid" || src=$?
  for f in server T P Q; do show "$f" "$out/dapltest.$f.log"; done
  if [ $rc -eq 0 ]; then result dapltest ok "$(since "$t0")"
  else result dapltest fail "$(since "$t0")" "(client status $rc, server status $src)"
  fi
else
  kill "$spid" 2>/dev/null || true; wait "$spid" 2>/dev/null || true
  show server "$out/dapltest.server.log"
  result dapltest fail "$(since "$t0")" "(server not ready)"
fi

printf '\n=== SUMMARY: %d passed, %d failed in %ss\n' "${#passed[@]}" "${#failed[@]}" "$(since "$t_all")"
[ ${#failed[@]} -eq 0 ] || { echo "failed: ${failed[*]}"; exit 1; }
