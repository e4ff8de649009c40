#!/bin/bash
# Smoke test of tools/datbench: a tiny run over loopback must complete and print both
# tables (latency, bandwidth) and write the CSV. Speed is not checked here.
#
#   run_datbench_smoke.sh <datbench> <dat.conf> <port> [datbench options...]
set -u
bin=$1 conf=$2 port=$3
shift 3
# Fixed ports: take turns with runs from other build trees (see run_pair.sh).
exec 9>/tmp/opendat-fixed-ports.lock
flock -w 600 9 || echo "warning: could not lock /tmp/opendat-fixed-ports.lock"
csv=$(mktemp)
trap 'rm -f "$csv"' EXIT
out=$(DAT_OVERRIDE=$conf timeout 300 "$bin" -q -n 100 --warmup 10 -b 65536 -r 1 \
    --lat-max 65536 --bw-max 1048576 --port "$port" --csv "$csv" "$@" 2>&1)
rc=$?
echo "$out"
fail=0
[[ $rc -eq 0 ]] || { echo "FAIL: datbench exited with $rc"; fail=1; }
for title in 'One-way latency' 'RDMA write, post to completion' 'Bandwidth'; do
    grep -qF "$title" <<<"$out" || { echo "FAIL: no '$title' table"; fail=1; }
done
for row in '|      8 B |' '|   64 KiB |' '|    1 MiB |'; do
    grep -qF "$row" <<<"$out" || { echo "FAIL: no row '$row'"; fail=1; }
done
head -1 "$csv" | grep -q '^section,test,size' || { echo "FAIL: CSV header missing"; fail=1; }
for t in tcp_pingpong dat_send_pingpong dat_write_pingpong tcp_stream dat_rdma_write dat_rdma_read dat_send; do
    grep -q ",$t," "$csv" || { echo "FAIL: CSV has no $t rows"; fail=1; }
done
exit $fail
