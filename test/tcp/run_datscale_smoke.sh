#!/bin/bash
# Smoke test of tools/datbench's datscale: N connected endpoints on one IA over loopback
# must all connect, the ping-pongs with 1 and with N endpoints open must complete, and the
# figures (set-up rates, memory per endpoint, latency rows) must be printed and written as
# CSV. Speed is not checked here (the figures are for docs/benchmarks.md).
#
#   run_datscale_smoke.sh <datscale> <dat.conf> <port> <endpoints> [datscale options...]
set -u
bin=$1 conf=$2 port=$3 n=$4
shift 4
# Fixed ports: take turns with runs from other build trees (see run_pair.sh).
exec 9>/tmp/opendat-fixed-ports.lock
flock -w 600 9 || echo "warning: could not lock /tmp/opendat-fixed-ports.lock"
csv=$(mktemp)
trap 'rm -f "$csv"' EXIT
out=$(DAT_OVERRIDE=$conf timeout 300 "$bin" -q -e "$n" -n 500 --warmup 50 --server-cpu 0 \
    --client-cpu $(($(nproc) - 1)) --port "$port" --csv "$csv" "$@" 2>&1)
rc=$?
echo "$out"
fail=0
[[ $rc -eq 0 ]] || { echo "FAIL: datscale exited with $rc"; fail=1; }
idle=$((n - 1))
for line in "endpoints: 1 busy + $idle idle" "Connection set-up, $idle connections" \
    '| DAT connect/accept to ESTABLISHED on both sides |' 'Memory per idle endpoint' \
    "| $n (1 busy + $idle idle) | 500 |" '| 1 (before the idle ones) | 500 |' \
    '| 1 (after they are gone) | 500 |' "latency ratio, $n endpoints" 'load average'; do
    grep -qF -- "$line" <<<"$out" || { echo "FAIL: no '$line'"; fail=1; }
done
# max_eps tells the truth: the endpoints the IA can connect at once, the hard descriptor
# limit (datscale inherits ours) less the 64 it keeps in reserve (docs/tcp-provider.md,
# "Limits per peer"); at least the endpoints that just connected.
max_eps=$(sed -n 's/.*the IA reports max_eps \([0-9]*\).*/\1/p' <<<"$out" | head -1)
hard=$(ulimit -Hn)
[[ $hard == unlimited ]] && want=$((2147483647 - 64)) || want=$((hard > 128 ? hard - 64 : hard / 2))
if [[ "$max_eps" != "$want" ]]; then
    echo "FAIL: the IA reports max_eps '$max_eps', not $want (hard descriptor limit $hard less 64)"
    fail=1
elif ((max_eps < n)); then
    echo "FAIL: the IA reports max_eps $max_eps, below the $n endpoints that connected"
    fail=1
fi
head -1 "$csv" | grep -q '^section,test,endpoints' || { echo "FAIL: CSV header missing"; fail=1; }
for t in tcp_connect_accept dat_connect_accept dat_ep_client dat_ep_server \
    dat_send_pingpong_1ep dat_send_pingpong_idle dat_send_pingpong_1ep_after; do
    grep -q ",$t,[0-9]" "$csv" || { echo "FAIL: CSV has no $t row"; fail=1; }
done
# Every figure is a positive number: a rate, KiB per endpoint (the endpoints cost memory),
# a latency.
awk -F, 'NR > 1 && $1 == "setup" && !($7 > 0) { print "FAIL: zero rate: " $0; bad = 1 }
         NR > 1 && $1 == "memory" && !($7 > 0) { print "FAIL: no memory growth: " $0; bad = 1 }
         NR > 1 && $1 == "latency" && !($5 > 0 && $4 == 500) { print "FAIL: latency row: " $0; bad = 1 }
         END { exit bad }' "$csv" || fail=1
exit $fail
