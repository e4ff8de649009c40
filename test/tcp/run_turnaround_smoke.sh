#!/bin/bash
# Smoke test of tools/bench_turnaround.sh: a short run must load the preload module into
# both datbench processes and print every turnaround line with a figure. Speed is not
# checked here (docs/benchmarks.md, "Turnaround").
#
#   run_turnaround_smoke.sh <source dir> <build dir> <dat.conf> <port>
set -u
src=$1 build=$2 conf=$3 port=$4
# Fixed ports: take turns with runs from other build trees (see run_pair.sh).
exec 9>/tmp/opendat-fixed-ports.lock
flock -w 600 9 || echo "warning: could not lock /tmp/opendat-fixed-ports.lock"
out=$(DAT_OVERRIDE=$conf timeout 300 "$src/tools/bench_turnaround.sh" -b "$build" -r 1 -n 2000 \
    -p "$port" 2>&1)
rc=$?
echo "$out"
fail=0
[[ $rc -eq 0 ]] || { echo "FAIL: bench_turnaround exited with $rc"; fail=1; }
for line in 'raw TCP: recv -> send' 'DAT send/recv: recv -> sendmsg' \
    'recv -> dat_evd_dequeue returns it' 'of which in dat_ep_post_recv' \
    'dat_ep_post_send -> sendmsg' 'DAT RDMA write: recv -> sendmsg' \
    'provider alone: recv -> sendmsg' "raw: send -> the answer's recv" \
    "DAT send: sendmsg -> the answer's recv" 'DAT: empty recv -> empty recv' \
    'DAT: last empty recv -> the recv that brings data'; do
    grep -E -q "^ +$line +[0-9]+ ns\$" <<<"$out" || { echo "FAIL: no figure for '$line'"; fail=1; }
done
grep -E -q '^ +DAT ping-pong messages found after an epoll_wait +[0-9.]+ %$' <<<"$out" ||
    { echo "FAIL: no share of messages found after an epoll_wait"; fail=1; }
exit $fail
