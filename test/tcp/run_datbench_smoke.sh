#!/bin/bash
# Smoke test of tools/datbench: a tiny run over loopback must complete and print its
# tables (latency with RDMA read, message rate, bandwidth) and write the CSV, with the
# processes pinned (server CPU 0, client the last CPU). Speed is not checked here.
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
    --lat-max 65536 --bw-max 1048576 --rate-msgs 2000 --server-cpu 0 \
    --client-cpu $(($(nproc) - 1)) --port "$port" --csv "$csv" "$@" 2>&1)
rc=$?
echo "$out"
fail=0
[[ $rc -eq 0 ]] || { echo "FAIL: datbench exited with $rc"; fail=1; }
raw_only=0
[[ " $* " == *" --raw-only "* ]] && raw_only=1
titles=('One-way latency' 'Message rate' 'Bandwidth' 'placement: server on CPU 0')
tests=(tcp_pingpong tcp_stream tcp_msgrate tcp_msgrate_batched)
if [[ $raw_only -eq 0 ]]; then
    titles+=('RDMA write, post to completion' 'DAT RDMA read (RTT/2)')
    tests+=(dat_send_pingpong dat_write_pingpong dat_rdma_read_rtt dat_rdma_write dat_rdma_read
        dat_send dat_write_rate dat_send_rate)
else
    # Only the baselines: no DAT row may appear.
    ! grep -q ',dat_' "$csv" || { echo "FAIL: --raw-only wrote DAT rows"; fail=1; }
fi
for title in "${titles[@]}"; do
    grep -qF "$title" <<<"$out" || { echo "FAIL: no '$title' table"; fail=1; }
done
for row in '|      8 B |' '|   64 KiB |' '|    1 MiB |'; do
    grep -qF "$row" <<<"$out" || { echo "FAIL: no row '$row'"; fail=1; }
done
head -1 "$csv" | grep -q '^section,test,size' || { echo "FAIL: CSV header missing"; fail=1; }
# The latency rounds are run in blocks, raw TCP and DAT in turn; every 8-byte row still
# holds all 100 timed rounds, however the blocks divide them.
blocks=10
[[ " $* " =~ \ --lat-blocks\ ([0-9]+)\  ]] && blocks=${BASH_REMATCH[1]}
grep -qF "in $blocks blocks, raw TCP and DAT in turn" <<<"$out" ||
    { echo "FAIL: no 'in $blocks blocks' in the header"; fail=1; }
while IFS=, read -r section test size iters _; do
    [[ $section == latency && $size == 8 && $test != dat_write_completion* ]] || continue
    [[ $iters == 100 ]] || { echo "FAIL: $test at 8 B has $iters timed rounds, not 100"; fail=1; }
done <"$csv"
for t in "${tests[@]}"; do
    grep -q ",$t," "$csv" || { echo "FAIL: CSV has no $t rows"; fail=1; }
done
# The baseline matches the mode: busy-polled when DAT polls, blocking when it waits.
if [[ " $* " == *" --wait "* ]]; then want='raw TCP baseline: blocking'; else want='raw TCP baseline: busy-polled'; fi
grep -qF "$want" <<<"$out" || { echo "FAIL: no '$want' line"; fail=1; }
exit $fail
