#!/usr/bin/env bash
# Batched transmit, measured: datbench with DAT_TCP_TX_BATCH=1 (a system call per frame,
# every post sent at once) and with the default 64 (back-to-back posts leave together),
# alternated round by round so that both meet the same machine load, and the medians of
# every figure side by side. docs/benchmarks.md, "Batched transmit", was made with it.
#
#   tools/bench_tx_batch.sh [-d DATBENCH] [-r ROUNDS] [-n LATENCY_ITERS] [-m RATE_MSGS]
#                           [-w] [-c CSVDIR]
#
# -w measures waiting (dat_evd_wait) instead of polling. Server on CPU 0, client on CPU 1
# (datbench --server-cpu/--client-cpu), at nice -15 when allowed. Run it in a private
# network namespace if you like: unshare -n bash -c 'ip link set lo up; tools/...'.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
datbench=$here/../build/default/tools/datbench/datbench
rounds=3 iters=5000 msgs=200000 wait="" csvdir=""
while getopts "d:r:n:m:wc:h" o; do
    case $o in
        d) datbench=$OPTARG ;;
        r) rounds=$OPTARG ;;
        n) iters=$OPTARG ;;
        m) msgs=$OPTARG ;;
        w) wait=--wait ;;
        c) csvdir=$OPTARG ;;
        *) sed -n 2,13p "$0"; exit 2 ;;
    esac
done
[[ -x $datbench ]] || { echo "bench_tx_batch: no datbench at $datbench (-d)" >&2; exit 1; }
nice_=""
nice -n -15 true 2>/dev/null && nice_="nice -n -15"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for ((r = 1; r <= rounds; r++)); do
    for b in 1 64; do
        csv=$tmp/b$b.r$r.csv
        DAT_TCP_TX_BATCH=$b $nice_ "$datbench" -q $wait -n "$iters" --lat-max 8 --bw-min 1024 \
            --bw-max 1048576 -b 67108864 -r 1 --rate-msgs "$msgs" --server-cpu 0 --client-cpu 1 \
            --csv "$csv" >/dev/null
        [[ -n $csvdir ]] && cp "$csv" "$csvdir/"
    done
    echo "bench_tx_batch: round $r of $rounds done" >&2
done

# key = section/test/size; value = median_us (latency) or mb_per_s / Mmsg/s.
awk -F, -v rounds="$rounds" '
    FNR == 1 { split(FILENAME, p, "/"); f = p[length(p)]; b = (f ~ /^b1\./) ? 1 : 64; next }
    { k = "" }
    $1 == "latency" && !seen[FILENAME, $2, $3]++ { k = "latency " $2 " " $3 " B (us)"; v = $5 }
    $1 == "bandwidth" { k = "bandwidth " $2 " " $3 " B (MB/s)"; v = $7 }
    $1 == "rate" { k = "rate " $2 " (M msg/s)"; v = $7 }
    k != "" {
        if (!(k in order)) { order[k] = ++n; keys[n] = k }
        vals[k, b, ++cnt[k, b]] = v
    }
    function median(k, b,    m, i, j, t, a) {
        m = cnt[k, b]
        for (i = 1; i <= m; i++) a[i] = vals[k, b, i]
        for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
        return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
    }
    END {
        printf "| figure (median of %d rounds) | DAT_TCP_TX_BATCH=1 | 64 (default) | 64 / 1 |\n", rounds
        print "|---|---|---|---|"
        for (i = 1; i <= n; i++) {
            k = keys[i]; a = median(k, 1); c = median(k, 64)
            printf "| %s | %.3f | %.3f | %.2fx |\n", k, a, c, (a > 0 ? c / a : 0)
        }
    }' "$tmp"/b*.csv
