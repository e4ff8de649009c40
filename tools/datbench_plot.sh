#!/bin/bash
# Draws datbench's CSV as pictures for the docs: one-way latency and bandwidth against
# message size, DAT next to the raw-TCP baseline of the same run.
#
#   tools/datbench_plot.sh POLLING.csv [WAITING.csv] [OUTDIR]
#
# Writes OUTDIR/datbench-latency.png and OUTDIR/datbench-bandwidth.png (OUTDIR defaults to
# docs/images). Needs gnuplot: if it is missing, the script says so and installs Debian's
# gnuplot-nox with apt-get (as root), or stops if it cannot.
set -eu
poll=${1:?usage: datbench_plot.sh POLLING.csv [WAITING.csv] [OUTDIR]}
wait_csv=${2:-}
out=${3:-$(dirname "$0")/../docs/images}
mkdir -p "$out"

if ! command -v gnuplot >/dev/null; then
    echo "datbench_plot: gnuplot is not installed; installing Debian's gnuplot-nox with apt-get" >&2
    if [[ $(id -u) -eq 0 ]]; then
        apt-get install -y gnuplot-nox >&2 || { echo "datbench_plot: apt-get failed" >&2; exit 1; }
    else
        echo "datbench_plot: not root: run 'sudo apt-get install gnuplot-nox' first" >&2
        exit 1
    fi
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# One file per series: size and value, sorted by size (gnuplot reads them as columns).
series() {  # csv section test column name
    [[ -f $1 ]] || return 0
    awk -F, -v s="$2" -v t="$3" -v c="$4" '$1 == s && $2 == t { print $3, $c }' "$1" |
        sort -n >"$tmp/$5"
}
series "$poll" latency tcp_pingpong 5 lat_tcp_poll
series "$poll" latency dat_send_pingpong 5 lat_send_poll
series "$poll" latency dat_write_pingpong 5 lat_write_poll
series "$poll" latency dat_rdma_read_rtt 5 lat_read_poll
series "$poll" bandwidth tcp_stream 7 bw_tcp_poll
series "$poll" bandwidth dat_rdma_write 7 bw_write_poll
series "$poll" bandwidth dat_rdma_read 7 bw_read_poll
series "$poll" bandwidth dat_send 7 bw_send_poll
have_wait=0
if [[ -n $wait_csv && -f $wait_csv ]]; then
    have_wait=1
    series "$wait_csv" latency tcp_pingpong 5 lat_tcp_wait
    series "$wait_csv" latency dat_send_pingpong 5 lat_send_wait
    series "$wait_csv" latency dat_write_pingpong 5 lat_write_wait
    series "$wait_csv" bandwidth tcp_stream 7 bw_tcp_wait
    series "$wait_csv" bandwidth dat_rdma_write 7 bw_write_wait
fi

common='set terminal pngcairo noenhanced size 900,560 font ",10"
set logscale x 2
set grid
set key top left
set format x "%.0s%cB"'
{
    echo "$common"
    echo "set output '$out/datbench-latency.png'"
    echo "set title 'One-way latency (half the round trip), loopback'"
    echo "set xlabel 'message size'; set ylabel 'microseconds (median)'; set logscale y"
    p="plot '$tmp/lat_tcp_poll' w lp t 'raw TCP, busy-polled', '$tmp/lat_send_poll' w lp t 'DAT send/recv, polling', '$tmp/lat_write_poll' w lp t 'DAT RDMA write, polling', '$tmp/lat_read_poll' w lp t 'DAT RDMA read RTT/2, polling'"
    if [[ $have_wait -eq 1 ]]; then
        p+=", '$tmp/lat_tcp_wait' w lp dt 2 t 'raw TCP, blocking', '$tmp/lat_send_wait' w lp dt 2 t 'DAT send/recv, dat_evd_wait', '$tmp/lat_write_wait' w lp dt 2 t 'DAT RDMA write, dat_evd_wait'"
    fi
    echo "$p"
    echo "unset logscale y"
    echo "set output '$out/datbench-bandwidth.png'"
    echo "set title 'Bandwidth, loopback'"
    echo "set xlabel 'message size'; set ylabel 'MB/s (10^6 bytes/s, median)'"
    p="plot '$tmp/bw_tcp_poll' w lp t 'raw TCP stream, busy-polled', '$tmp/bw_write_poll' w lp t 'DAT RDMA write, polling', '$tmp/bw_read_poll' w lp t 'DAT RDMA read, polling', '$tmp/bw_send_poll' w lp t 'DAT send, polling'"
    if [[ $have_wait -eq 1 ]]; then
        p+=", '$tmp/bw_tcp_wait' w lp dt 2 t 'raw TCP stream, blocking', '$tmp/bw_write_wait' w lp dt 2 t 'DAT RDMA write, dat_evd_wait'"
    fi
    echo "$p"
} >"$tmp/plot.gp"
gnuplot "$tmp/plot.gp"
echo "datbench_plot: wrote $out/datbench-latency.png and $out/datbench-bandwidth.png"
