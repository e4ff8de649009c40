#!/bin/bash
# The verbs provider's RDMA tests: everything that needs an RDMA device, in one run.
#
#   rdma-suite.sh <test/verbs build dir> <our libdat2 dir | -> <output dir>
#
# Where: in the soft-RoCE VM (test/vm/run-in-vm.sh --share <build> -- test/verbs/rdma-suite.sh
# ...; rxe0 on dummy0, 192.168.77.1, as test/vm/guest-init.sh sets up), or on a host with
# its own RDMA device (test/verbs/run-native.sh finds the device and sets the variables
# below). Server and client run on this one machine and device.
#
# Steps (each with a time limit; a server is started first, its client once it listens):
#  1. verbs_probe -a over our provider: attributes, delayed_ack, RMR, empty-queue codes;
#     verbs_probe -r: frees racing posts (no free fails, no device object leaked);
#     verbs_events: wake-up latency of merged DTO+connection+software EVDs and of CNOs
#     (event-driven, no polling slice), connection events on a merged EVD, suppressed
#     and solicited completions; through both libdat2s;
#  2. Debian's dtest (default, -p, -W, -c, -w; -b 4096 -B 10), dtestcm -c 50 (and -w),
#     dtestx (IB extensions: write with immediate, atomics) and dtestsrq (shared receive
#     queues: default, -c 4 -B 10 -t 3, and -S 0) over our verbs provider,
#     through our libdat2 (LD_LIBRARY_PATH) and through Debian's (DAT_OVERRIDE);
#  3. our libdat2 hosting Debian's libdaplofa.so.2: dtest (default, -p, -W);
#  4. the figure: dat_bench RDMA-write 64 KiB bandwidth and 8-byte send latency, our
#     provider against libdaplofa, same device, same libdat2 (Debian's), both in one process
#     pair and timed in alternating blocks, so that both meet the same host load;
#  5. the conformance suite (test/conformance), unchanged, against the verbs provider;
#  6. with OPENDAT_VERBS_SAN_BUILDS, the asan/ubsan builds' provider under the probe and dtest.
# Env: OPENDAT_VERBS_STEPS (default "1 2 3 4 5"), OPENDAT_VERBS_STEP_TIMEOUT (180 s),
#      OPENDAT_VERBS_BENCH_ITERS (bw iterations, 2000), OPENDAT_VERBS_LAT_ITERS (2000),
#      OPENDAT_VERBS_BENCH_ROUNDS (9), OPENDAT_VERBS_BENCH_WARMUP (untimed iterations, 200),
#      OPENDAT_VERBS_DEVICE / _PORT / _NETDEV / _ADDR: the device, its port, the netdev that
#      carries it and that netdev's IPv4 address (default rxe0 / 1 / dummy0 / 192.168.77.1);
#      OPENDAT_VERBS_WHERE: what the figure says it ran on (default "TCG VM").
set -u
tdir=$1 ourlib=$2 out=$3
steps=${OPENDAT_VERBS_STEPS:-1 2 3 4 5}
limit=${OPENDAT_VERBS_STEP_TIMEOUT:-180}
dev=${OPENDAT_VERBS_DEVICE:-rxe0} port=${OPENDAT_VERBS_PORT:-1}
netdev=${OPENDAT_VERBS_NETDEV:-dummy0} addr=${OPENDAT_VERBS_ADDR:-192.168.77.1}
mkdir -p "$out"
# The build writes its dat.conf for the VM's device; this run's copy names this device.
localize_conf() {  # <build's verbs.conf> <copy>
    sed -e "s/\"dummy0 0\"/\"$netdev 0\"/" -e "s/\"rxe0 1\"/\"$dev $port\"/" \
        -e "s/\"192\.168\.77\.1 0\"/\"$addr 0\"/" "$1" >"$2"
}
conf=$out/verbs.conf
localize_conf "$tdir/verbs.conf" "$conf"
unset LD_PRELOAD
base_ld=${LD_LIBRARY_PATH:-}
unset LD_LIBRARY_PATH
export DAT_OVERRIDE=$conf
pass=0 fail=0
declare -a summary

if [[ ! -e /sys/class/infiniband/$dev ]]; then
    echo "rdma-suite: no RDMA device $dev here: run this inside the soft-RoCE VM (test/vm/run-in-vm.sh)" >&2
    echo "            or name this host's device (test/verbs/run-native.sh)" >&2
    exit 2
fi
ulimit -l unlimited 2>/dev/null || true

record() {  # name status detail
    if [[ $2 == 0 ]]; then pass=$((pass + 1)); summary+=("PASS  $1"); else fail=$((fail + 1)); summary+=("FAIL  $1  ($3)"); fi
    echo "=== $( [[ $2 == 0 ]] && echo PASS || echo FAIL ): $1"
}

tcp_listening() {  # port (decimal)
    local hex; hex=$(printf '%04X' "$1")
    grep -qiE "^ *[0-9]+: [0-9A-F]+:$hex [0-9A-F]+:0000 0A" /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# run_pair <name> <libdir|-> <server cmd...> -- <client cmd...>; server listens on TCP 15828
# (dtest side channel) unless WAIT_FOR=<seconds> says to just wait.
run_pair() {
    local name=$1 lib=$2; shift 2
    local -a srv=() cli=()
    while [[ $1 != -- ]]; do srv+=("$1"); shift; done; shift
    cli=("$@")
    local log=$out/$name
    local env=(env ${PAIR_ENV:-})
    [[ $lib != - ]] && env+=("LD_LIBRARY_PATH=$lib")
    for _ in $(seq 50); do tcp_listening 15828 || break; sleep 0.2; done
    local t0=$SECONDS
    timeout "$limit" "${env[@]}" "${srv[@]}" >"$log.server" 2>&1 &
    local spid=$!
    if [[ -n ${WAIT_LINE:-} ]]; then
        # rdma_cm listeners do not show in /proc/net/tcp: wait for the server to say so.
        for _ in $(seq 600); do grep -q "$WAIT_LINE" "$log.server" 2>/dev/null && break; kill -0 $spid 2>/dev/null || break; sleep 0.1; done
    elif [[ -n ${WAIT_FOR:-} ]]; then
        sleep "$WAIT_FOR"
    else
        for _ in $(seq 600); do tcp_listening 15828 && break; kill -0 $spid 2>/dev/null || break; sleep 0.1; done
    fi
    timeout "$limit" "${env[@]}" "${cli[@]}" >"$log.client" 2>&1
    local crc=$?
    wait $spid
    local src=$?
    echo "--- $name: server rc=$src client rc=$crc ($((SECONDS - t0)) s)"
    PAIR_SRC=$src PAIR_CRC=$crc
}

check_dtool() {  # name tool
    local name=$1 tool=$2 ok=0 why=""
    [[ $PAIR_SRC == 0 && $PAIR_CRC == 0 ]] || { ok=1; why="rc server $PAIR_SRC client $PAIR_CRC"; }
    local verdict='DAPL Test Complete. PASSED'
    [[ $tool == dtestcm ]] && verdict='DAPL Connection Test Complete'
    [[ $tool == dtestsrq ]] && verdict='SRQ Test Complete.'  # "RC SRQ" or, with -S 0, "RC none SRQ"
    for side in server client; do
        grep -qF "$verdict" "$out/$name.$side" || { ok=1; why="$why; $side no verdict"; }
        grep -qE 'FAILED|ERR:' "$out/$name.$side" && { ok=1; why="$why; $side error"; }
    done
    if [[ $tool == dtestcm ]]; then
        grep -qE 'ALL [0-9]+ CONNECTED' "$out/$name.server" || { ok=1; why="$why; not all connected"; }
    fi
    if [[ $ok != 0 ]]; then
        echo "---- $name server:"; tail -n 25 "$out/$name.server"
        echo "---- $name client:"; tail -n 25 "$out/$name.client"
    fi
    record "$name" $ok "$why"
}

dtool() {  # name lib ia tool args...
    local name=$1 lib=$2 ia=$3 tool=$4; shift 4
    run_pair "$name" "$lib" "$tool" -P "$ia" "$@" -- "$tool" -P "$ia" -h $addr "$@"
    check_dtool "$name" "$tool"
}

# Debian's dtestx, server then client (-c); it reports each test's PASSED line.
dtestx_pair() {  # name lib ia
    local name=$1 lib=$2 ia=$3 ok=0 why=""
    # Like dtest, it exchanges its parameters over TCP port 15828: the client starts once
    # the server listens there (its stdout is block-buffered into the log, so no line).
    run_pair "$name" "$lib" dtestx -P "$ia" -- dtestx -P "$ia" -c -h $addr
    [[ $PAIR_SRC == 0 && $PAIR_CRC == 0 ]] || { ok=1; why="rc server $PAIR_SRC client $PAIR_CRC"; }
    for side in server client; do
        for t in RDMA_WRITE_WITH_IMMEDIATE_DATA CMP_SWAP FETCH_ADD; do
            grep -q "$t test - PASSED" "$out/$name.$side" || { ok=1; why="$why; $side: no $t PASSED"; }
        done
        grep -q 'IB extension test - .* PASSED' "$out/$name.$side" || { ok=1; why="$why; $side: no verdict"; }
    done
    if [[ $ok != 0 ]]; then
        echo "---- $name server:"; tail -n 25 "$out/$name.server"
        echo "---- $name client:"; tail -n 25 "$out/$name.client"
    fi
    record "$name" $ok "$why"
}

echo "rdma-suite: $(uname -r), $(nproc) CPUs; libdat2: ours=${ourlib} reference=$(readlink -f /usr/lib/x86_64-linux-gnu/libdat2.so.2)"
start=$SECONDS

if [[ " $steps " == *" 1 "* ]]; then
    for ia in ofa-v2-verbs-rxe ofa-v2-verbs-rxe0 ofa-v2-verbs-ip; do
        timeout 60 "$tdir/verbs_probe" -P $ia -a >"$out/probe-$ia" 2>&1
        rc=$?; cat "$out/probe-$ia"
        record "probe $ia (reference libdat2)" $rc "rc $rc"
    done
    if [[ $ourlib != - ]]; then
        LD_LIBRARY_PATH=$ourlib timeout 60 "$tdir/verbs_probe" -P ofa-v2-verbs-rxe -a >"$out/probe-ours" 2>&1
        rc=$?; record "probe ofa-v2-verbs-rxe (our libdat2)" $rc "rc $rc"
    fi
    # Frees racing posts on another thread: every free succeeds, and the device refuses
    # (and so leaks) no queue pair, SRQ, CQ or PD (verbs_probe -r; verbs/device_retire.hpp).
    timeout 120 "$tdir/verbs_probe" -P ofa-v2-verbs-rxe -r 300 >"$out/racing" 2>&1
    rc=$?; tail -n 5 "$out/racing"
    if [[ $rc -eq 0 ]] && grep -q "(leaked)" "$out/racing"; then rc=1; fi
    record "frees racing posts: every free succeeds, no device object leaked" $rc "rc $rc"
    fronts=("reference|-")
    [[ $ourlib != - ]] && fronts=("opendat|$ourlib" "${fronts[@]}")
    q=46100
    for f in "${fronts[@]}"; do
        fn=${f%%|*} lib=${f#*|}
        lenv=()
        [[ $lib != - ]] && lenv=("LD_LIBRARY_PATH=$lib")
        env "${lenv[@]}" timeout 120 "$tdir/verbs_events" -P ofa-v2-verbs-rxe -n 30 -q $q >"$out/events-$fn" 2>&1
        rc=$?; cat "$out/events-$fn"
        record "verbs_events: event-driven waits, completion flags ($fn libdat2)" $rc "rc $rc"
        q=$((q + 10))
    done
fi

if [[ " $steps " == *" 2 "* ]]; then
    fronts=("reference|-")
    [[ $ourlib != - ]] && fronts=("opendat|$ourlib" "${fronts[@]}")
    for f in "${fronts[@]}"; do
        fn=${f%%|*} lib=${f#*|}
        dtool "dtest_default_$fn" "$lib" ofa-v2-verbs-rxe dtest -b 4096 -B 10
        dtool "dtest_polling_$fn" "$lib" ofa-v2-verbs-rxe dtest -b 4096 -B 10 -p
        dtool "dtest_write_pingpong_$fn" "$lib" ofa-v2-verbs-rxe dtest -b 4096 -B 10 -W
        dtool "dtest_cno_$fn" "$lib" ofa-v2-verbs-rxe dtest -b 4096 -B 10 -c
        dtool "dtestcm_50_$fn" "$lib" ofa-v2-verbs-rxe dtestcm -c 50
        dtool "dtestcm_50_wait_$fn" "$lib" ofa-v2-verbs-rxe dtestcm -c 50 -w
        # IB extensions: dtest -w streams RDMA writes ending in a write with immediate
        # (it takes that path when the IA reports DAT_EXTENSION_IB); dtestx runs its RC
        # extension test (write with immediate, compare-and-swap, fetch-and-add).
        dtool "dtest_write_stream_immed_$fn" "$lib" ofa-v2-verbs-rxe dtest -b 4096 -B 10 -w
        dtestx_pair "dtestx_rc_$fn" "$lib" ofa-v2-verbs-rxe
        # Shared receive queues: dtestsrq's connections all take their receives from one
        # SRQ (ibv_srq), with bursts and several connections; -S 0 gives each EP its own.
        # It has no side channel: the client connects to qualifier 45248 once the server
        # had time to listen (an rdma_cm listener does not show in /proc/net/tcp).
        WAIT_FOR=3 dtool "dtestsrq_default_$fn" "$lib" ofa-v2-verbs-rxe dtestsrq
        WAIT_FOR=3 dtool "dtestsrq_bursts_$fn" "$lib" ofa-v2-verbs-rxe dtestsrq -c 4 -B 10 -t 3
        WAIT_FOR=3 dtool "dtestsrq_nosrq_$fn" "$lib" ofa-v2-verbs-rxe dtestsrq -S 0
    done
fi

if [[ " $steps " == *" 3 "* && $ourlib != - ]]; then
    dtool "daplofa_dtest_default_opendat" "$ourlib" ofa-v2-rxe dtest -b 4096 -B 10
    dtool "daplofa_dtest_polling_opendat" "$ourlib" ofa-v2-rxe dtest -b 4096 -B 10 -p
    dtool "daplofa_dtest_write_pingpong_opendat" "$ourlib" ofa-v2-rxe dtest -b 4096 -B 10 -W
fi

if [[ " $steps " == *" 4 "* ]]; then
    bw_n=${OPENDAT_VERBS_BENCH_ITERS:-2000} lat_n=${OPENDAT_VERBS_LAT_ITERS:-2000}
    warmup=${OPENDAT_VERBS_BENCH_WARMUP:-200}
    declare -A res
    q=45300
    rounds=${OPENDAT_VERBS_BENCH_ROUNDS:-9}
    ias=(ofa-v2-verbs-rxe ofa-v2-rxe)
    # The device's counters around each run: retransmissions or sequence errors would show here.
    hwc() { (cd /sys/class/infiniband/$dev/ports/$port/hw_counters 2>/dev/null && grep -H . * 2>/dev/null | tr '\n' ' '); }
    hwc_diff() {  # before after: the counters that moved
        awk -v a="$1" -v b="$2" 'BEGIN { n = split(a, x, " "); for (i = 1; i <= n; i++) { split(x[i], kv, ":"); v[kv[1]] = kv[2] }
            n = split(b, y, " "); for (i = 1; i <= n; i++) { split(y[i], kv, ":"); d = kv[2] - v[kv[1]]; if (d) printf "%s=%d ", kv[1], d } }'
    }
    for round in $(seq "$rounds"); do
        # Both providers in ONE client (and one server) process, one connection each, timed
        # in alternating blocks of 100 (dat_bench -P a,b): a TCG guest on a busy host loses
        # time slices for seconds at a time, and this way both meet the same ones.
        order="${ias[0]},${ias[1]}"
        ((round % 2 == 0)) && order="${ias[1]},${ias[0]}"  # neither always goes first
        for m in "bw 65536 $bw_n" "lat 8 $lat_n"; do
            set -- $m
            name="bench_$1_$round"
            # A measurement that breaks under a loaded TCG host is tried once more
            # before it counts as a failure.
            for attempt in 1 2; do
                q=$((q + 2))
                c0=$(hwc)
                WAIT_LINE="server listening" run_pair "$name" - "$tdir/dat_bench" -P $order -s -q $q -m $1 -b $2 -n $3 -W $warmup -- \
                    "$tdir/dat_bench" -P $order -h $addr -q $q -m $1 -b $2 -n $3 -W $warmup
                echo "--- $name $dev counters: $(hwc_diff "$c0" "$(hwc)")"
                [[ $PAIR_CRC == 0 ]] && [[ $(grep -c '^RESULT' "$out/$name.client") == 2 ]] && break
                echo "--- $name: attempt $attempt failed"
            done
            if [[ $PAIR_CRC == 0 && $(grep -c '^RESULT' "$out/$name.client") == 2 ]]; then
                record "$name" 0 ""
                grep -E '^(RESULT|CPU)' "$out/$name.client"
                for ia in "${ias[@]}"; do
                    line=$(grep "^RESULT $ia " "$out/$name.client")
                    res[$ia.$1.$round]=$(awk '{print $6}' <<<"$line")
                    [[ $1 == bw ]] && res[$ia.bwall.$round]=$(awk '{print $(NF-1)}' <<<"$line")
                done
            else
                tail -n 5 "$out/$name.server" "$out/$name.client"
                record "$name" 1 "rc $PAIR_SRC/$PAIR_CRC"
            fi
        done
    done
    median() { sort -g | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print "n/a"}'; }
    {
        echo
        echo "Side by side on $dev (${OPENDAT_VERBS_WHERE:-TCG VM}, $(nproc) CPUs; Debian libdat2; completions polled;"
        echo "both providers in one process, timed in alternating blocks of 100; median of $rounds rounds,"
        echo "each after $warmup untimed iterations; bw: $bw_n x 64 KiB RDMA writes, 16 in flight,"
        echo "a round's rate the median of its blocks; lat: half the round trip of an 8-byte send"
        echo "ping-pong, median of $lat_n):"
        printf '%-18s %-34s %-34s\n' "provider" "RDMA write 64 KiB, MB/s" "send 8 B latency, us"
        overall=()
        for ia in "${ias[@]}"; do
            label="OpenDAT verbs"; [[ $ia == ofa-v2-rxe ]] && label="DAPL libdaplofa"
            bws="" lats="" alls=""
            for r in $(seq "$rounds"); do bws+="${res[$ia.bw.$r]:-} "; lats+="${res[$ia.lat.$r]:-} "; alls+="${res[$ia.bwall.$r]:-} "; done
            bmed=$(tr ' ' '\n' <<<"$bws" | grep . | median)
            lmed=$(tr ' ' '\n' <<<"$lats" | grep . | median)
            printf '%-18s %-34s %-34s\n' "$label" "$bmed  (${bws% })" "$lmed  (${lats% })"
            overall+=("$(printf '%-18s %s  (%s)' "$label" "$(tr ' ' '\n' <<<"$alls" | grep . | median)" "${alls% }")")
        done
        echo "RDMA write 64 KiB, all blocks' bytes over all blocks' time (host stalls included), MB/s:"
        printf '%s\n' "${overall[@]}"
        # Paired: both providers ran side by side in each round, so their per-round ratio
        # does not depend on how busy the host was in that round.
        for mm in bw lat; do
            pairs=""
            for r in $(seq "$rounds"); do
                a=${res[${ias[0]}.$mm.$r]:-} b=${res[${ias[1]}.$mm.$r]:-}
                [[ -n $a && -n $b ]] && pairs+="$a $b"$'\n'
            done
            [[ -n $pairs ]] || continue
            ratio=$(grep . <<<"$pairs" | awk '{ printf "%.4f\n", $1 / $2 }' | median)
            wins=$(grep . <<<"$pairs" | awk -v m=$mm '{ w += (m == "bw" ? $1 >= $2 : $1 <= $2) } END { print w + 0 }')
            if [[ $mm == bw ]]; then
                echo "paired, OpenDAT / DAPL per round: bw median ratio $ratio (above 1: OpenDAT faster); OpenDAT at least as fast in $wins of $(grep -c . <<<"$pairs") rounds"
            else
                echo "paired, OpenDAT / DAPL per round: lat median ratio $ratio (below 1: OpenDAT lower); OpenDAT at least as low in $wins of $(grep -c . <<<"$pairs") rounds"
            fi
        done
    } | tee "$out/figure.txt"
fi

# 5. The provider-generic conformance suite (test/conformance/conformance_tests), unchanged,
#    against the verbs provider: --ia names the IA. The suite itself reports the cases this
#    device cannot support as UNSUPPORTED, with the reason (GoogleTest skips whose message
#    starts so); every other case must pass. Through both libdat2s.
if [[ " $steps " == *" 5 "* ]]; then
    prog=$tdir/../conformance/conformance_tests
    fronts=("reference|-")
    [[ $ourlib != - ]] && fronts=("opendat|$ourlib" "${fronts[@]}")
    for f in "${fronts[@]}"; do
        fn=${f%%|*} lib=${f#*|}
        log=$out/conformance-$fn.log report=$out/conformance-$fn.txt
        if [[ ! -x $prog ]]; then
            record "conformance suite ($fn libdat2)" 1 "$prog not built"
            continue
        fi
        lenv=()
        [[ $lib != - ]] && lenv=("LD_LIBRARY_PATH=$lib")
        env "${lenv[@]}" timeout 900 "$prog" --ia=ofa-v2-verbs-rxe --ia-ts=ofa-v2-verbs-rxe-ts >"$log" 2>&1
        rc=$?
        # One line per case: PASS, UNSUPPORTED (with the suite's reason) or FAIL.
        awk '
            /^\[ RUN      \] / { why = "" }
            /^UNSUPPORTED on / { why = $0; sub(/^UNSUPPORTED on [^:]*: /, "", why) }
            !/ms\)$/ { next }
            { name = $4; sub(/,$/, "", name) }
            /^\[       OK \] / { printf "  PASS         %s\n", name }
            /^\[  SKIPPED \] / {
                if (why != "") printf "  UNSUPPORTED  %s: %s\n", name, why
                else printf "  FAIL         %s (skipped without an UNSUPPORTED reason)\n", name
            }
            /^\[  FAILED  \] / { printf "  FAIL         %s\n", name }
        ' "$log" >"$report"
        grep -m1 '^conformance: IA' "$log"
        cat "$report"
        n_pass=$(grep -c '^  PASS' "$report") n_uns=$(grep -c '^  UNSUPPORTED' "$report")
        n_fail=$(grep -c '^  FAIL' "$report")
        echo "conformance ($fn libdat2): $n_pass passed, $n_uns unsupported on this device, $n_fail failed (rc $rc)"
        bad=0
        [[ $rc == 0 && $n_fail == 0 && $n_pass -gt 0 ]] || bad=1
        [[ $bad == 0 ]] || grep -B3 -A25 'Failure\|child check failed' "$log" | head -80
        record "conformance suite, $n_pass pass / $n_uns unsupported ($fn libdat2)" $bad \
            "rc $rc, $n_fail failed: see $report"
    done
fi

# 6. Sanitizer builds (OPENDAT_VERBS_SAN_BUILDS: build folders configured with the asan or
#    ubsan preset): the probe and dtest (default, -p) over that build's verbs provider.
#    Debian's dtest is not instrumented: the ASan runtime is preloaded for it.
for sb in ${OPENDAT_VERBS_SAN_BUILDS:-}; do
    [[ " $steps " == *" 6 "* || -n ${OPENDAT_VERBS_SAN_BUILDS:-} ]] || break
    sname=$(basename "$sb")
    so=$sb/lib/opendat/libopendat-verbs.so
    rt=$(ldd "$so" 2>/dev/null | grep -oE '/[^ ]*lib(asan|ubsan)\.so[^ ]*' | head -1)
    localize_conf "$sb/test/verbs/verbs.conf" "$out/verbs-$sname.conf"
    senv="DAT_OVERRIDE=$out/verbs-$sname.conf ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1"
    [[ $rt == *asan* ]] && senv+=" LD_PRELOAD=$rt"
    env $senv LD_PRELOAD= timeout 120 "$sb/test/verbs/verbs_probe" -P ofa-v2-verbs-rxe -a >"$out/san-probe-$sname" 2>&1
    rc=$?
    grep -qE 'ERROR: AddressSanitizer|runtime error:' "$out/san-probe-$sname" && rc=1
    [[ $rc == 0 ]] || tail -n 30 "$out/san-probe-$sname"
    record "$sname: probe" $rc "rc $rc"
    for mode in "default|" "polling|-p"; do
        mn=${mode%%|*} ma=${mode#*|}
        name="${sname}_dtest_$mn"
        PAIR_ENV=$senv run_pair "$name" - dtest -P ofa-v2-verbs-rxe -b 4096 -B 10 $ma -- \
            dtest -P ofa-v2-verbs-rxe -h $addr -b 4096 -B 10 $ma
        if grep -qE 'ERROR: AddressSanitizer|runtime error:' "$out/$name.server" "$out/$name.client"; then
            grep -hE -A20 'ERROR: AddressSanitizer|runtime error:' "$out/$name.server" "$out/$name.client" | head -40
            PAIR_SRC=99
        fi
        check_dtool "$name" dtest
    done
done

echo
echo "rdma-suite summary ($((SECONDS - start)) s on $dev):"
printf '  %s\n' "${summary[@]}"
echo "rdma-suite: $pass passed, $fail failed"
[[ $fail == 0 ]]
