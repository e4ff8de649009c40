#!/bin/bash
# tools/bench_footprint.sh as a check: a short polled datbench under valgrind's lackey
# must show every interval (raw and DAT turnarounds, empty rounds), and the DAT ones must
# run no function of the tcp provider or libdat2 that the compiler left out of the hot
# block. check_hot_layout.sh checks a list of names; this checks what the ping-pongs really
# run, so a call that strays out of the block (a page more to touch after every system
# call, docs/benchmarks.md) fails here by name.
#
#   run_footprint_check.sh <source dir> <build dir> <dat.conf> <port> OBJECT...
#                                         (the object files of both libraries)
set -u
src=$1 build=$2 conf=$3 port=$4
shift 4
if ! command -v valgrind >/dev/null; then
    echo "SKIP: valgrind is not installed (scripts/install-deps.sh installs it)"
    exit 77
fi
# Fixed ports: take turns with runs from other build trees (see run_pair.sh).
exec 9>/tmp/opendat-fixed-ports.lock
flock -w 600 9 || echo "warning: could not lock /tmp/opendat-fixed-ports.lock"
out=$(DAT_OVERRIDE=$conf "$src/tools/bench_footprint.sh" -b "$build" -n 100 -p "$port" -- \
    --check --hot "$@" 2>&1)
rc=$?
echo "$out"
fail=0
[[ $rc -eq 0 ]] || { echo "FAIL: bench_footprint exited with $rc"; fail=1; }
for row in 'raw TCP turnaround' 'DAT send/recv turnaround' 'DAT RDMA write turnaround' \
    'DAT RDMA read turnaround' \
    'raw TCP empty round' 'DAT empty round'; do
    grep -E -q "^\| $row +\| +[1-9][0-9]* \| +[1-9][0-9]* \|" <<<"$out" ||
        { echo "FAIL: no '$row' row with a count and instructions"; fail=1; }
done
grep -q '^Every provider and libdat2 function the DAT intervals ran is in the hot block' <<<"$out" ||
    { echo "FAIL: the hot block does not hold every function the ping-pongs ran"; fail=1; }
[[ $fail -eq 0 ]] && echo "PASS"
exit $fail
