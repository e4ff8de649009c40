#!/bin/bash
# The unmodified Debian dapltest (dapl2-utils) performance test, -T P, over an OpenDAT IA,
# next to raw TCP measured by datbench --raw-only in the same run, as ratios.
#
#   tools/bench_dapltest.sh [-b BUILD_DIR] [-i IA] [-r ROUNDS] [-n ITERS]
#
# Per round, in this order (interleaved, so load changes hit both sides alike):
#   raw TCP busy-polled and blocking (8 B ping-pong, 1 MiB stream),
#   dapltest -m p / -m b: RR 8 and RW 8 with pipeline 1 (latency), RW 1 MiB pipelined
#   (throughput).
# Prints the medians and the ratios. Run it in a private network namespace:
#   unshare -n -- sh -c 'ip link set lo up && tools/bench_dapltest.sh'
# Server on CPU 0, client on CPU 1 (taskset); both at nice -15 when allowed, like datbench.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=$here/../build/default
ia=ofa-v2-tcp-lo
rounds=3
iters=20000
while getopts "b:i:r:n:h" o; do
    case $o in
        b) build=$OPTARG ;;
        i) ia=$OPTARG ;;
        r) rounds=$OPTARG ;;
        n) iters=$OPTARG ;;
        *) sed -n '2,13p' "$0"; exit 2 ;;
    esac
done
command -v dapltest >/dev/null || { echo "bench_dapltest: dapltest missing (apt-get install dapl2-utils)"; exit 1; }
conf=$build/conf/dat.conf
datbench=$build/tools/datbench/datbench
[[ -x $datbench && -f $conf ]] || { echo "bench_dapltest: build first ($datbench, $conf)"; exit 1; }
export DAT_OVERRIDE=$conf LD_LIBRARY_PATH=$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nice_=""
nice -n -15 true 2>/dev/null && nice_="nice -n -15"
tmp=$(mktemp -d)
trap 'kill $srv 2>/dev/null; rm -rf "$tmp"' EXIT
srv=""

raw() {  # mode(poll|wait) -> appends "name value" lines to $tmp/raw.<mode>
    local w=""
    [[ $1 == wait ]] && w=--wait
    $nice_ "$datbench" -q --raw-only $w -n "$iters" --lat-max 8 --bw-min 1048576 --bw-max 1048576 \
        -b 268435456 -r 1 --rate-msgs 64 --server-cpu 0 --client-cpu 1 --csv "$tmp/raw.csv" \
        >/dev/null || return 1
    awk -F, -v m="$1" '$2 == "tcp_pingpong" { print "rtt_" m, 2 * $5 }
        $2 == "tcp_stream" { print "bw_" m, $7 }' "$tmp/raw.csv" >>"$tmp/values"
}

# dapltest -T P: prints the average per operation and the throughput.
dt() {  # name mode(p|b) pipeline op size
    local out
    out=$($nice_ taskset -c 1 timeout 300 dapltest -T P -s 127.0.0.1 -D "$ia" -m "$2" -i "$iters" \
        -p "$3" "$4" "$5" 1 2>&1) || { echo "$out" >&2; return 1; }
    echo "$out" >"$tmp/$1.log"
    # dapltest's machine-readable line: "raw: OP, ops, size, segs, pipeline, cpu%, ops/s,
    # MB/s (2^20 bytes), mean latency us, mean post us, mean reap us".
    local lat bw
    lat=$(awk -F', *' '/^raw: / { print $9 }' <<<"$out")
    bw=$(awk -F', *' '/^raw: / { print $8 * 1.048576 }' <<<"$out")
    echo "lat_$1 ${lat:-nan}" >>"$tmp/values"
    echo "bw_$1 ${bw:-nan}" >>"$tmp/values"
}

$nice_ taskset -c 0 dapltest -T S -D "$ia" >"$tmp/server.log" 2>&1 &
srv=$!
sleep 1
for ((r = 1; r <= rounds; r++)); do
    echo "bench_dapltest: round $r of $rounds" >&2
    raw poll || exit 1
    dt rr8_p p 1 RR 8 && dt rw8_p p 1 RW 8 && dt rw1m_p p 16 RW 1048576 || exit 1
    raw wait || exit 1
    dt rr8_b b 1 RR 8 && dt rw8_b b 1 RW 8 && dt rw1m_b b 16 RW 1048576 || exit 1
done
timeout 30 dapltest -T Q -s 127.0.0.1 -D "$ia" >/dev/null 2>&1
wait $srv 2>/dev/null
srv=""

med() { awk -v k="$1" '$1 == k { print $2 }' "$tmp/values" | sort -g | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : "nan" }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf (b > 0 && a == a + 0 ? "%.2fx" : "-"), a / b }'; }
echo
echo "dapltest -T P over $ia next to raw TCP, loopback, median of $rounds rounds, $iters iterations"
echo "placement: dapltest server and datbench server on CPU 0, clients on CPU 1; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '| %-50s | %-12s | %-12s | %-7s |\n' "figure" "dapltest" "raw TCP" "ratio"
printf '|%s|%s|%s|%s|\n' "----------------------------------------------------" "--------------" "--------------" "---------"
for m in p b; do
    [[ $m == p ]] && rm_=poll && label="polling (-m p), raw busy-polled" || { rm_=wait; label="blocking (-m b), raw blocking"; }
    rtt=$(med rtt_$rm_) bw=$(med bw_$rm_)
    for op in rr8 rw8; do
        v=$(med lat_${op}_$m)
        printf '| %-50s | %9s us | %9s us | %7s |\n' "$(tr a-z A-Z <<<"${op%8}") 8 B latency, $label" "$v" "$rtt" "$(ratio "$v" "$rtt")"
    done
    v=$(med bw_rw1m_$m)
    printf '| %-50s | %7s MB/s | %7s MB/s | %7s |\n' "RW 1 MiB x16, $label" "$v" "$bw" "$(ratio "$v" "$bw")"
done
echo "(dapltest reports means, raw TCP medians; latency ratio = dapltest's mean time per operation /"
echo " raw TCP round trip; bandwidth ratio = dapltest / raw stream, both 10^6 bytes/s)"
