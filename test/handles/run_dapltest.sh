#!/bin/sh
# The unmodified Debian dapltest over our libdat2 and tcp provider:
#   -T F -f queryinfo  passes garbage handles such as (DAT_CNO_HANDLE)0x1: refused, no crash;
#   -T L               prints dat_strerror's strings for every failure: always written.
# Usage: run_dapltest.sh <libdat2 dir> <dat.conf> [asan runtime to preload]
set -u
LIBDIR=$1 CONF=$2 PRELOAD=${3:-}
command -v dapltest >/dev/null || { echo "dapltest not installed (dapl2-utils)"; exit 1; }
export LD_LIBRARY_PATH="$LIBDIR" DAT_OVERRIDE="$CONF"
if [ -n "$PRELOAD" ]; then export LD_PRELOAD="$PRELOAD" ASAN_OPTIONS=detect_leaks=0; fi
IA=ofa-v2-tcp-lo
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
timeout 120 dapltest -T S -D $IA >"$out/server" 2>&1 &
server=$!
sleep 1
fail=0
timeout 60 dapltest -T F -s 127.0.0.1 -D $IA -f queryinfo >"$out/F" 2>&1
rc=$?
passes=$(grep -c "Result: PASS" "$out/F")
echo "dapltest -T F -f queryinfo: exit $rc, $passes cases passed"
[ $rc -eq 0 ] || { echo "FAIL: -T F exit $rc"; tail -20 "$out/F"; fail=1; }
[ "$passes" -ge 17 ] || { echo "FAIL: expected >= 17 passing queryinfo cases"; fail=1; }
grep -q "Result: FAIL" "$out/F" && { echo "FAIL: a queryinfo case failed"; fail=1; }

timeout 120 dapltest -T L -D $IA -d >"$out/L" 2>&1
rc=$?
echo "dapltest -T L: exit $rc"
[ $rc -eq 0 ] || { echo "FAIL: -T L exit $rc"; tail -20 "$out/L"; fail=1; }
grep -q "Limit Testing Completed" "$out/L" || { echo "FAIL: -T L did not complete"; fail=1; }
# dat_strerror names the error (the reference leaves the minor string unwritten here).
grep "fails:" "$out/L" | head -5
if grep "fails:" "$out/L" | grep -q "unknown error"; then echo "FAIL: unnamed error"; fail=1; fi
for f in "$out/F" "$out/L"; do
  grep -E "AddressSanitizer|runtime error|Segmentation" "$f" && fail=1
done
timeout 10 dapltest -T Q -s 127.0.0.1 -D $IA >/dev/null 2>&1
wait $server
exit $fail
