#!/usr/bin/env bash
# The samples over the verbs provider, inside the soft-RoCE VM (test/vm): rxe0 on dummy0
# (192.168.77.1), server and client on the same host, the same programs and checks as the
# tcp runs of samples_tests. Run by the vm_samples test (-DOPENDAT_VM_TESTS=ON), or by hand:
#   test/vm/run-in-vm.sh --share <build> -- test/samples/vm_samples.sh <build>/samples <verbs provider .so> <out dir>
set -u
samples=$1 provider=$2 out=$3
addr=192.168.77.1
if [[ ! -e /sys/class/infiniband/rxe0 ]]; then
    echo "vm_samples: no rxe0 here: run this inside the soft-RoCE VM (test/vm/run-in-vm.sh)" >&2
    exit 1
fi
ulimit -l unlimited 2>/dev/null || true
mkdir -p "$out"
printf '%s\n' "ofa-v2-verbs-rxe u2.0 nonthreadsafe default $provider opendat.2.0 \"dummy0 0\" \"\"" >"$out/dat.conf"
export DAT_OVERRIDE=$out/dat.conf
ia=ofa-v2-verbs-rxe
fail=0 qual=20000

check() {  # description file pattern
    if grep -qE -- "$3" "$2"; then echo "  ok: $1"; else echo "  FAIL: $1 (no '$3' in $2)"; fail=1; fi
}

pair() {  # name client-args... : server and client of samples/<name>
    local name=$1; shift
    qual=$((qual + 1))
    echo "== $name $*"
    timeout 300 "$samples/$name" -p $qual $ia >"$out/$name.server" 2>&1 &
    local spid=$!
    # rdma_cm listens without a TCP socket: wait for the server to say it listens.
    for _ in $(seq 300); do grep -q "server: waiting" "$out/$name.server" && break; sleep 0.1; done
    timeout 300 "$samples/$name" -h $addr -p $qual "$@" $ia >"$out/$name.client" 2>&1
    local crc=$?
    wait $spid
    local src=$?
    if [[ $src != 0 || $crc != 0 ]]; then
        echo "  FAIL: server rc $src, client rc $crc"; fail=1
        sed 's/^/    server| /' "$out/$name.server"; sed 's/^/    client| /' "$out/$name.client"
    fi
}

pair rdma_rw -s 1048576
check "rdma_rw server verified the write" "$out/rdma_rw.server" "RDMA write of 1048576 bytes arrived intact"
check "rdma_rw client verified its read" "$out/rdma_rw.client" "server's buffer: 1048576 bytes verified"
pair add_ints -a 40 -b 2
check "add_ints sum" "$out/add_ints.client" "client: 40 \+ 2 = 42 \(correct\)"
pair pingpong -n 200 -s 4096
check "pingpong" "$out/pingpong.client" "200 round trips of 4096 bytes, average round trip"
pair delayed_ack -n 200
check "delayed_ack phase 1" "$out/delayed_ack.client" "delayed_ack = false: 200 RDMA writes"
check "delayed_ack reports the attribute" "$out/delayed_ack.client" "delayed_ack_supported = |does not report delayed_ack_supported"
echo "== trace_tuning"
timeout 120 "$samples/trace_tuning" $ia >"$out/trace_tuning.out" 2>&1 || { echo "  FAIL: trace_tuning rc $?"; fail=1; }
check "trace_tuning" "$out/trace_tuning.out" "trace lines appeared only at the higher level|more trace lines at the higher level"
for f in "$out"/*.client "$out"/*.out; do echo "--- $f"; cat "$f"; done
exit $fail
