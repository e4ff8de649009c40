#!/usr/bin/env bash
# Where a polled 8-byte ping-pong's time goes inside each process: the turnaround from the
# recv() that brings a message to the send of the answer, for raw TCP and for DAT, split
# where the DAT API is crossed (tools/datbench/turnaround_preload.cpp says what each line
# measures), and the rest of the round trip: the wait for the answer, the poll loop's
# rounds and the system calls themselves, raw and DAT alike. Prints, for every line, the
# median over all rounds and both processes of the per-process medians, in nanoseconds
# (each interval includes one clock read per boundary), and how often a DAT poller found a
# ping-pong's message right after asking epoll.
#
#   tools/bench_turnaround.sh [-b BUILD_DIR] [-r ROUNDS] [-n ITERS] [-i IA] [-p PORT]
#
# Server on CPU 0, client on CPU 1, at nice -15 when allowed. Build tree only (the preload
# module is not installed). The DAT side runs the build tree's copy of the tcp provider that
# makes its system calls through glibc's syscall(), which the preload interposes: the
# shipped one makes recv and send in line, which no preload sees (providers/util/sys_io.hpp). Run it in a private network namespace if you like:
# unshare -n bash -c 'ip link set lo up; tools/bench_turnaround.sh'.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$here/../build/default
rounds=3 iters=50000 ia=ofa-v2-tcp-lo port=18500
while getopts "b:r:n:i:p:h" o; do
    case $o in
        b) build=$OPTARG ;;
        r) rounds=$OPTARG ;;
        n) iters=$OPTARG ;;
        i) ia=$OPTARG ;;
        p) port=$OPTARG ;;
        *) sed -n 2,15p "$0"; exit 2 ;;
    esac
done
datbench=$build/tools/datbench/datbench
preload=$build/tools/datbench/libdatbench-turnaround.so
for f in "$datbench" "$preload"; do
    [[ -e $f ]] || { echo "bench_turnaround: no $f (build first, or -b BUILD_DIR)" >&2; exit 1; }
done
conf_in=${DAT_OVERRIDE:-$build/conf/dat.conf}
# The tcp provider's copy whose system calls the preload sees (tools/datbench/CMakeLists.txt):
# a dat.conf naming it in place of the shipped library.
traced=$build/tools/datbench/libopendat-tcp-syscall-fn.so
[[ -e $traced ]] || { echo "bench_turnaround: no $traced (build first)" >&2; exit 1; }
conf=$(mktemp)
sed "s|[^ ]*/libopendat-tcp\.so |$traced |" "$conf_in" >"$conf"
grep -q "$traced" "$conf" || { echo "bench_turnaround: no tcp provider in $conf_in" >&2; exit 1; }
nice_=""
nice -n -15 true 2>/dev/null && nice_="nice -n -15"
out=$(mktemp)
trap 'rm -f "$out" "$conf"' EXIT
for ((r = 1; r <= rounds; r++)); do
    DAT_OVERRIDE=$conf LD_PRELOAD=$preload $nice_ "$datbench" -q -i "$ia" -p "$port" -n "$iters" \
        --lat-max 8 --bw-min 4096 --bw-max 4096 -b 1048576 -r 1 --rate-msgs 2000 \
        --server-cpu 0 --client-cpu 1 2>&1 >/dev/null | grep '^turnaround' >>"$out" || true
done
grep -q 'raw TCP' "$out" || { echo "bench_turnaround: no figures (did the preload load?)" >&2; exit 1; }
echo "Turnaround inside one process, polled 8 B ping-pong, $rounds round(s) x $iters, IA $ia"
echo "(median of the per-process medians; the clock read costs $(grep -o 'clock [0-9]* ns' "$out" |
    awk '{print $2}' | sort -n | awk '{x[NR]=$1} END {print x[int((NR+1)/2)]}') ns and is inside every interval)"
# One row per label, in the order the preload prints them.
grep ' median ' "$out" | sed 's/^turnaround   //' | awk -F' median +' '
    { split($2, f, " "); label = $1; sub(/ +$/, "", label)
      if (!(label in n)) order[++rows] = label
      v[label, ++n[label]] = f[1] }
    END { for (i = 1; i <= rows; i++) {
            l = order[i]; m = n[l]
            for (k = 1; k <= m; k++) {  # insertion sort: a handful of values
                x = v[l, k] + 0
                for (j = k - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]
                a[j + 1] = x }
            printf "  %-50s %6d ns\n", l, a[int((m + 1) / 2)] } }'
# Over all rounds and both processes: how often the poll round that found a DAT message
# had asked epoll since its previous look at the socket.
awk '$1 == "turnaround-epoll" { a += $2; n += $4 }
     END { if (n > 0) printf "  DAT ping-pong messages found after an epoll_wait  %5.1f %%\n", 100 * a / n }' "$out"
