#!/bin/bash
# The unmodified Debian dapltest server over the tcp provider, with a small descriptor
# limit, flooded with idle TCP connections that never send a connection request; a
# legitimate `dapltest -T T` client must still be served, and the server must stay idle
# (its CPU time over the flood is printed and bounded).
#
#   run_dapltest_flood.sh <dat.conf> <libdir|-> [flood size]
#
# <libdir> "-" uses the system libdat2; otherwise ours (LD_LIBRARY_PATH). Exit 77 = skipped.
# OPENDAT_SYS_PRELOAD: sanitizer runtime preloaded into the system binaries.
set -u
if [ -n "${OPENDAT_SKIP_FD_FLOOD:-}" ]; then echo "SKIP: $OPENDAT_SKIP_FD_FLOOD"; exit 77; fi
conf=$1 libdir=$2 flood=${3:-300}
ia=ofa-v2-tcp-lo
port=62000  # dapltest's server qualifier, 0xF230 (port base 0)
if [[ ! -x /usr/bin/dapltest ]]; then
    echo "SKIP: /usr/bin/dapltest is not installed (package dapl2-utils)"
    exit 77
fi
export DAT_OVERRIDE=$conf
[[ $libdir != - ]] && export LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
exec 9>/tmp/opendat-dapltest-port.lock
flock -w 600 9 || echo "warning: could not lock /tmp/opendat-dapltest-port.lock"
work=$(mktemp -d)
srv_pid=
trap '[[ -n $srv_pid ]] && kill $srv_pid 2>/dev/null; rm -rf "$work"' EXIT
pre=${OPENDAT_SYS_PRELOAD:+LD_PRELOAD=$OPENDAT_SYS_PRELOAD}

listening() { grep -qiE "^ *[0-9]+: [0-9A-F]+:$(printf '%04X' $port) [0-9A-F]+:0000 0A" /proc/net/tcp 2>/dev/null; }
cpu() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }  # utime+stime, ticks
hz=$(getconf CLK_TCK)

# The server: 64 descriptors at most; idle connections are kept up to 60 s (the handshake
# deadline), so the flood stands for the whole run: the client is served by the IA
# dropping its oldest idle connection whenever it needs a descriptor.
(ulimit -n 64 && exec timeout 120 env $pre DAT_TCP_HANDSHAKE_MS=60000 \
    DAPL_TRACE_LEVEL=${FLOOD_TRACE:-1} dapltest -T S -D $ia) >"$work/server.out" 2>&1 &
srv_pid=$!
for _ in $(seq 200); do listening && break; sleep 0.05; done
listening || { echo "FAIL: the dapltest server does not listen"; cat "$work/server.out"; exit 1; }
# dapltest -T S runs under timeout: the process doing the work is its child.
dt_pid=$(pgrep -P $srv_pid dapltest || echo $srv_pid)

# The flood: idle connections, held open by this shell.
fds=()
for _ in $(seq "$flood"); do
    if exec {fd}<>/dev/tcp/127.0.0.1/$port 2>/dev/null; then fds+=("$fd"); fi
done
c0=$(cpu "$dt_pid"); t0=$(date +%s.%N)
sleep 2
c1=$(cpu "$dt_pid"); t1=$(date +%s.%N)
busy=$(awk -v a="$c0" -v b="$c1" -v hz="$hz" -v s="$t0" -v e="$t1" 'BEGIN { printf "%.3f %.2f", (b - a) / hz, e - s }')
echo "flood: ${#fds[@]} idle connections to a server limited to 64 descriptors; server CPU over the flood: ${busy% *} s in ${busy#* } s"

# A legitimate client while the flood stands.
timeout 120 env $pre dapltest -T T -s 127.0.0.1 -D $ia -i 100 -t 1 -w 1 -R BE \
    client SR 4096 server SR 4096 >"$work/client.out" 2>&1
cli_rc=$?
c2=$(cpu "$dt_pid")
timeout 60 env $pre dapltest -T Q -s 127.0.0.1 -D $ia >"$work/quit.out" 2>&1
wait $srv_pid
srv_rc=$?
srv_pid=
for fd in "${fds[@]}"; do exec {fd}>&-; done

echo "=== server rc=$srv_rc"; cat "$work/server.out"
echo "=== client (-T T) rc=$cli_rc"; cat "$work/client.out"
echo "=== quit"; cat "$work/quit.out"
fail=0
[[ $cli_rc -eq 0 ]] || { echo "FAIL: the client was not served"; fail=1; }
grep -qE "Stats ----|Test completed successfully" "$work/client.out" || { echo "FAIL: no success verdict from the client"; fail=1; }
[[ ${#fds[@]} -gt 64 ]] || { echo "FAIL: the flood did not exceed the descriptor limit"; fail=1; }
awk -v b="${busy% *}" -v w="${busy#* }" 'BEGIN { exit !(b < 0.25 * w) }' ||
    { echo "FAIL: the server was busy during the flood"; fail=1; }
exit $fail
