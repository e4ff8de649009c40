#!/bin/bash
# OpenDAT next to raw TCP, libfabric's tcp provider, UCX and qperf on loopback, in one run, as
# ratios to the raw-TCP figure of the same round.
#
#   tools/bench_peers.sh [-b BUILD_DIR] [-r ROUNDS] [-n ITERS] [-B BYTES] [-o CSV_DIR] [-s]
#
# -B: bytes per bandwidth measurement, OpenDAT and raw TCP alike (default 1 GiB). With
# 128 MiB (20 ms at 1 MiB) single measurements of the same code spread 0.67-1.65x; with
# 1 GiB, 1.04-1.12x (docs/benchmarks.md, "Bandwidth measured long enough").
# -s adds a column for OpenDAT with DAT_TCP_PROGRESS=sleep (the progress thread sleeps as
# soon as nothing is ready: the behaviour before adaptive progress), measured in the same
# rounds.
#
# Each round runs, back to back: datbench polling and waiting (OpenDAT and raw TCP),
# fi_pingpong -p tcp (libfabric-bin), ucx_perftest over UCX's tcp transport (ucx-utils) and
# qperf's tcp_bw with 8-byte messages (qperf: the message-rate baseline issue 10 names), the
# peers only when installed (the table says "not installed" otherwise). Ratios are taken
# per round and the median over the rounds is printed (paired: load noise hits both sides
# of a ratio alike). Server on CPU 0, client on CPU 1, nice -15 when allowed. Run it in a
# private network namespace:
#   unshare -n -- sh -c 'ip link set lo up && tools/bench_peers.sh'
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=$here/../build/default
rounds=3
iters=20000
bw_bytes=1073741824
csvdir=""
sleep_too=0
while getopts "b:r:n:B:o:sh" o; do
    case $o in
        b) build=$OPTARG ;;
        r) rounds=$OPTARG ;;
        n) iters=$OPTARG ;;
        B) bw_bytes=$OPTARG ;;
        o) csvdir=$OPTARG ;;
        s) sleep_too=1 ;;
        *) sed -n '2,21p' "$0"; exit 2 ;;
    esac
done
conf=$build/conf/dat.conf
datbench=$build/tools/datbench/datbench
[[ -x $datbench && -f $conf ]] || { echo "bench_peers: build first ($datbench, $conf)"; exit 1; }
if [[ -n $csvdir ]]; then  # made here: a missing one lost every round's CSV, one cp error each
    mkdir -p "$csvdir" || { echo "bench_peers: cannot create $csvdir"; exit 1; }
fi
export DAT_OVERRIDE=$conf
nice_=""
nice -n -15 true 2>/dev/null && nice_="nice -n -15"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
vals=$tmp/values  # lines: round key value
have_fi=0 have_ucx=0 have_qperf=0
command -v fi_pingpong >/dev/null && have_fi=1
command -v ucx_perftest >/dev/null && have_ucx=1
command -v qperf >/dev/null && have_qperf=1
[[ $have_fi -eq 1 ]] || echo "bench_peers: fi_pingpong not installed (apt-get install libfabric-bin)" >&2
[[ $have_ucx -eq 1 ]] || echo "bench_peers: ucx_perftest not installed (apt-get install ucx-utils)" >&2
[[ $have_qperf -eq 1 ]] || echo "bench_peers: qperf not installed (apt-get install qperf)" >&2

datbench_round() {  # round mode(poll|wait) [progress mode]
    local w="" csv=$tmp/dat.$2.$1.csv prefix="" env=()
    [[ $2 == wait ]] && w=--wait
    if [[ -n ${3:-} ]]; then
        prefix=$3. env=(env DAT_TCP_PROGRESS=$3) csv=$tmp/dat.$3.$2.$1.csv
    fi
    "${env[@]}" $nice_ "$datbench" -q $w -n "$iters" --lat-max 8 --bw-min 4096 --bw-max 1048576 -b "$bw_bytes" \
        -r 1 --rate-msgs 20000 --server-cpu 0 --client-cpu 1 --csv "$csv" >"$tmp/dat.$2.$1.txt" || return 1
    [[ -n $csvdir ]] && cp "$csv" "$csvdir/datbench-${prefix}$2-round$1.csv"
    awk -F, -v r="$1" -v m="$prefix$2" '$1 == "latency" { print r, m "." $2 "." $3, $5 }
        $1 == "bandwidth" { print r, m "." $2 "." $3, $7 }
        $1 == "rate" { print r, m "." $2, $7 }' "$csv" >>"$vals"
}

fi_round() {  # round: fi_pingpong msg endpoint, 8 bytes, usec/xfer is one way
    local out
    $nice_ taskset -c 0 timeout 120 fi_pingpong -p tcp -e msg -I "$iters" -S 8 -B 47600 >/dev/null 2>&1 &
    sleep 0.5
    out=$($nice_ taskset -c 1 timeout 120 fi_pingpong -p tcp -e msg -I "$iters" -S 8 -P 47600 127.0.0.1 2>&1)
    wait
    awk -v r="$1" '$1 == "8" && NF >= 8 { print r, "fi.msg_lat.8", $7 }' <<<"$out" >>"$vals"
}

qperf_round() {  # round: qperf tcp_bw, 8-byte messages, one send() each (the kernel
                 # coalesces them into segments); -vvs prints msg_rate in K/sec or M/sec
    local out
    $nice_ taskset -c 0 timeout 60 qperf -lp 19765 >/dev/null 2>&1 &
    sleep 0.5
    out=$($nice_ taskset -c 1 timeout 60 qperf -lp 19765 -t 3 -m 8 -vvs 127.0.0.1 tcp_bw quit 2>&1)
    wait
    awk -v r="$1" '$1 == "msg_rate" { v = $3; if ($4 ~ /^K/) v /= 1000; if ($4 ~ /^G/) v *= 1000
        print r, "qperf.tcp_bw_mr.8", v }' <<<"$out" >>"$vals"
}

ucx_one() {  # round key test size extra...: key gets the 50th percentile latency (lat) or
             # the overall bandwidth/message rate (bw/mr)
    local r=$1 key=$2 test=$3 size=$4 kind=$5
    shift 5
    local out
    UCX_TLS=tcp UCX_NET_DEVICES=lo $nice_ taskset -c 0 timeout 120 ucx_perftest -p 13400 >/dev/null 2>&1 &
    sleep 0.5
    out=$(UCX_TLS=tcp UCX_NET_DEVICES=lo $nice_ taskset -c 1 timeout 120 ucx_perftest 127.0.0.1 \
        -p 13400 -t "$test" -s "$size" -f "$@" 2>&1)
    wait
    awk -v r="$r" -v k="$key" -v kind="$kind" '
        /^[ \t]*[0-9]+[ \t]+[0-9.]+[ \t]+[0-9.]+/ && NF >= 8 {
            v = kind == "lat" ? $2 : kind == "bw" ? $6 * 1.048576 : $8 / 1e6; print r, k, v }' \
        <<<"$out" >>"$vals"
}

ucx_round() {
    local r=$1 n=$iters
    ucx_one "$r" ucx.am_lat.8 am_lat 8 lat -n "$n" -x tcp -d lo
    ucx_one "$r" ucx.tag_lat.8 tag_lat 8 lat -n "$n"
    ucx_one "$r" ucx.put_lat.8 ucp_put_lat 8 lat -n "$n"
    ucx_one "$r" ucx.get_lat.8 ucp_get 8 lat -n "$n"
    ucx_one "$r" ucx.am_mr.8 am_bw 8 mr -n $((n * 10)) -x tcp -d lo -O 64
    ucx_one "$r" ucx.put_bw.1048576 ucp_put_bw 1048576 bw -n 2000
}

for ((r = 1; r <= rounds; r++)); do
    echo "bench_peers: round $r of $rounds" >&2
    datbench_round "$r" poll || { echo "bench_peers: datbench (polling) failed"; exit 1; }
    [[ $have_fi -eq 1 ]] && fi_round "$r"
    [[ $have_ucx -eq 1 ]] && ucx_round "$r"
    [[ $have_qperf -eq 1 ]] && qperf_round "$r"
    datbench_round "$r" wait || { echo "bench_peers: datbench (waiting) failed"; exit 1; }
    if [[ $sleep_too -eq 1 ]]; then
        datbench_round "$r" poll sleep || { echo "bench_peers: datbench (polling, sleep) failed"; exit 1; }
        datbench_round "$r" wait sleep || { echo "bench_peers: datbench (waiting, sleep) failed"; exit 1; }
    fi
done

echo
echo "OpenDAT, raw TCP, libfabric tcp, UCX tcp and qperf on loopback: median over $rounds rounds of the per-round ratio"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) CPUs, Linux $(uname -r); load $(cut -d' ' -f1-3 /proc/loadavg) at the end"
echo "placement: servers on CPU 0, clients on CPU 1 (the progress threads share their process's CPU)"
python3 - "$vals" "$have_fi" "$have_ucx" "$sleep_too" "$have_qperf" <<'PY'
import sys, statistics as st
vals, have_fi, have_ucx = sys.argv[1], sys.argv[2] == "1", sys.argv[3] == "1"
sleep_too = sys.argv[4] == "1"
have_qperf = sys.argv[5] == "1"
by = {}
for line in open(vals):
    r, k, v = line.split()
    by.setdefault(k, {})[int(r)] = float(v)
def ratio(a, b, scale=1.0):
    """Median over rounds of a/(b*scale); None when either side is missing."""
    if a not in by or b not in by: return None
    rs = [by[a][r] / (by[b][r] * scale) for r in by[a] if r in by[b] and by[b][r] > 0]
    return st.median(rs) if rs else None
def med(k):
    return st.median(by[k].values()) if k in by else None
def cell(x, unit=""):
    return "-" if x is None else f"{x:.2f}{unit}"
rows = [
  # figure, OpenDAT key, raw key, lower is better?, peers [(label, key, scale)]
  ("8 B send/recv ping-pong, polling (one-way us)", "poll.dat_send_pingpong.8", "poll.tcp_pingpong.8",
   [("libfabric tcp msg", "fi.msg_lat.8", 1), ("UCX am_lat", "ucx.am_lat.8", 1), ("UCX tag_lat", "ucx.tag_lat.8", 1)]),
  ("8 B RDMA-write ping-pong, polling (one-way us)", "poll.dat_write_pingpong.8", "poll.tcp_pingpong.8",
   [("UCX ucp_put_lat", "ucx.put_lat.8", 1)]),
  ("8 B RDMA read, round trip / 2 (us)", "poll.dat_rdma_read_rtt.8", "poll.tcp_pingpong.8",
   [("UCX ucp_get", "ucx.get_lat.8", 2)]),
  ("8 B send/recv ping-pong, waiting (vs blocking raw)", "wait.dat_send_pingpong.8", "wait.tcp_pingpong.8", []),
  ("8 B RDMA-write ping-pong, waiting (vs blocking raw)", "wait.dat_write_pingpong.8", "wait.tcp_pingpong.8", []),
  ("8 B message rate, 64 in flight (Mmsg/s)", "poll.dat_write_rate", "poll.tcp_msgrate",
   [("raw TCP batched", "poll.tcp_msgrate_batched", 1), ("UCX am_bw -O 64", "ucx.am_mr.8", 1),
    ("qperf tcp_bw -m 8", "qperf.tcp_bw_mr.8", 1)]),
  ("4 KiB RDMA write, polling (MB/s)", "poll.dat_rdma_write.4096", "poll.tcp_stream.4096", []),
  ("16 KiB RDMA write, polling (MB/s)", "poll.dat_rdma_write.16384", "poll.tcp_stream.16384", []),
  ("4 KiB RDMA read, polling (MB/s)", "poll.dat_rdma_read.4096", "poll.tcp_stream.4096", []),
  ("16 KiB RDMA read, polling (MB/s)", "poll.dat_rdma_read.16384", "poll.tcp_stream.16384", []),
  ("4 KiB send, polling (MB/s)", "poll.dat_send.4096", "poll.tcp_stream.4096", []),
  ("16 KiB send, polling (MB/s)", "poll.dat_send.16384", "poll.tcp_stream.16384", []),
  ("1 MiB RDMA write, polling (MB/s)", "poll.dat_rdma_write.1048576", "poll.tcp_stream.1048576",
   [("UCX ucp_put_bw", "ucx.put_bw.1048576", 1)]),
  ("1 MiB RDMA write, blocking (MB/s)", "wait.dat_rdma_write.1048576", "wait.tcp_stream.1048576", []),
]
if sleep_too:
    print("| figure | raw TCP | OpenDAT | OpenDAT / raw | sleep mode / raw | peers / raw |")
    print("|---|---|---|---|---|---|")
else:
    print("| figure | raw TCP | OpenDAT | OpenDAT / raw | peers / raw |")
    print("|---|---|---|---|---|")
for fig, dat, raw, peers in rows:
    ps = []
    for label, key, scale in peers:
        if key.startswith("fi.") and not have_fi: ps.append(f"{label}: not installed"); continue
        if key.startswith("ucx.") and not have_ucx: ps.append(f"{label}: not installed"); continue
        if key.startswith("qperf.") and not have_qperf: ps.append(f"{label}: not installed"); continue
        # a peer's figure is compared with raw in the same unit (get: round trip -> /2)
        rr = ratio(key, raw, scale)
        ps.append(f"{label} {cell(rr, 'x')}")
    extra = f" {cell(ratio('sleep.' + dat, raw), 'x')} |" if sleep_too else ""
    print(f"| {fig} | {cell(med(raw))} | {cell(med(dat))} | {cell(ratio(dat, raw), 'x')} |{extra} {'; '.join(ps) or '-'} |")
q = ratio("poll.dat_write_rate", "qperf.tcp_bw_mr.8")
if q is not None:
    print(f"\n8 B message rate: OpenDAT {cell(med('poll.dat_write_rate'))} M/s, qperf tcp_bw -m 8 "
          f"{cell(med('qperf.tcp_bw_mr.8'))} M/s; OpenDAT / qperf {cell(q, 'x')} (issue 10: >= 1.0x)")
print()
print("Latency: lower is better, ratio > 1 = slower than raw TCP. Rates and bandwidth: higher is better.")
PY
