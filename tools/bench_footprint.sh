#!/usr/bin/env bash
# What a polled 8-byte ping-pong's user-space code touches between two system calls, raw
# TCP and DAT side by side: instructions, distinct cache lines and pages of code and data
# per turnaround (the recv() that brings a message to the send of the answer) and per empty
# round of the poll loop (tools/footprint.py says how each is cut out). datbench runs under
# valgrind's lackey, so the figures are counts, not times: they do not move with the
# machine's speed, and a change to the hot path shows in one run. On a machine whose
# system calls cool the caches and TLBs, these counts set what DAT pays above raw TCP
# (docs/benchmarks.md, "The footprint between two system calls").
#
#   tools/bench_footprint.sh [-b BUILD_DIR] [-n ITERS] [-i IA] [-p PORT] [-k DIR] [-- ARGS]
#
# ARGS go to tools/footprint.py (e.g. --functions 20, or --hot OBJECT... --check). -k keeps
# valgrind's logs in DIR (hundreds of MB). Build tree only; needs valgrind and python3
# (scripts/install-deps.sh installs both).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$here/../build/default
iters=200 ia=ofa-v2-tcp-lo port=18500 keep=""
while getopts "b:n:i:p:k:h" o; do
    case $o in
        b) build=$OPTARG ;;
        n) iters=$OPTARG ;;
        i) ia=$OPTARG ;;
        p) port=$OPTARG ;;
        k) keep=$OPTARG ;;
        *) sed -n 2,15p "$0"; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
datbench=$build/tools/datbench/datbench
[[ -x $datbench ]] || { echo "bench_footprint: no $datbench (build first, or -b BUILD_DIR)" >&2; exit 1; }
for tool in valgrind python3 nm objdump; do
    command -v "$tool" >/dev/null ||
        { echo "bench_footprint: $tool is not installed (scripts/install-deps.sh)" >&2; exit 1; }
done
conf=${DAT_OVERRIDE:-$build/conf/dat.conf}
logs=${keep:-$(mktemp -d)}
mkdir -p "$logs"
[[ -n $keep ]] || trap 'rm -rf "$logs"' EXIT
rm -f "$logs"/lackey.*
# One log per process (%p).
if ! DAT_OVERRIDE=$conf timeout 500 valgrind --tool=lackey --trace-mem=yes --trace-syscalls=yes \
    --trace-children=yes --log-file="$logs/lackey.%p" "$datbench" -q -i "$ia" -p "$port" \
    -n "$iters" --warmup 20 --lat-max 8 --bw-min 4096 --bw-max 4096 -b 16384 -r 1 \
    --rate-msgs 64 >"$logs/datbench.out" 2>&1; then
    echo "bench_footprint: datbench under valgrind failed:" >&2
    cat "$logs/datbench.out" >&2
    exit 1
fi
# The parent first: a forked child's pid is larger (barring a wrap of the pid counter).
mapfile -t files < <(for f in "$logs"/lackey.*; do echo "${f##*.} $f"; done | sort -n | cut -d' ' -f2-)
echo "datbench under valgrind's lackey, polled, $iters 8-byte round trips per ping-pong, IA $ia"
python3 "$here/footprint.py" "${files[@]}" "$@"
