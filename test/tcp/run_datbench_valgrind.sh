#!/bin/bash
# tools/datbench under valgrind's memcheck, the tool users reach for on a bad day: a short
# polled run over loopback must complete with no error reported in either process
# (datbench, libdat2 and the tcp provider: the progress thread, the polled socket, the
# wire, connection set-up and teardown). It found datbench sending its plan's
# uninitialised padding to the server.
#
#   run_datbench_valgrind.sh <datbench> <dat.conf> <port>
#
# Exit 77 (skipped, with the reason) without valgrind; scripts/install-deps.sh installs it.
set -u
bin=$1 conf=$2 port=$3
if ! command -v valgrind >/dev/null; then
    echo "SKIP: valgrind is not installed (scripts/install-deps.sh installs it)"
    exit 77
fi
# Fixed ports: take turns with runs from other build trees (see run_pair.sh).
exec 9>/tmp/opendat-fixed-ports.lock
flock -w 600 9 || echo "warning: could not lock /tmp/opendat-fixed-ports.lock"
out=$(DAT_OVERRIDE=$conf timeout 600 valgrind --tool=memcheck -q --error-exitcode=99 \
    --num-callers=12 "$bin" -q -n 200 --warmup 20 -b 65536 -r 1 --lat-max 8 --bw-max 4096 \
    --rate-msgs 200 --port "$port" 2>&1)
rc=$?
echo "$out"
fail=0
[[ $rc -eq 0 ]] || { echo "FAIL: datbench under memcheck exited with $rc (memcheck errors, if any, are above)"; fail=1; }
for t in 'DAT send/recv ping-pong' '|      8 B |' 'DAT send/recv, signaled' 'DAT RDMA read'; do
    grep -qF "$t" <<<"$out" || { echo "FAIL: no '$t' in the output"; fail=1; }
done
[[ $fail -eq 0 ]] && echo "PASS"
exit $fail
