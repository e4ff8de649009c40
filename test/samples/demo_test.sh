#!/usr/bin/env bash
# The README's demo, its part after the build (scripts/demo-show.sh), on this build tree:
# it must end with status 0, print no error line, and show the data moved and verified.
#
#   demo_test.sh <scripts/demo-show.sh> <build dir>
set -uo pipefail
show=$1 build=$2
out=$(bash "$show" "$build" 2>&1)
rc=$?
printf '%s\n' "$out"
bad=0
check() {  # check <what> <regex>: the output must have a line matching regex
  grep -qE "$2" <<<"$out" || { echo "FAIL: no $1 (/$2/)"; bad=1; }
}
[ "$rc" = 0 ] || { echo "FAIL: demo-show.sh exited with status $rc"; bad=1; }
# No error line anywhere: not from the registry listing (each IA opened as its entry says),
# not from a sample, not from dtest.
if errs=$(grep -inE '\b(err|error|errors|fail|failed|failure|warning|abort|aborted)\b|sanitizer' <<<"$out"); then
  echo "FAIL: error lines in the demo's output:"; printf '%s\n' "$errs"; bad=1
fi
check "registry listing" '^   [0-9]+ registry entr'
check "IA ofa-v2-tcp-lo-ts opened" '^     ofa-v2-tcp-lo-ts$'
check "adapter line" 'adapter .* provider '
check "verified RDMA write" "RDMA write of 4194304 bytes arrived intact"
check "verified RDMA read (server)" "RDMA read of the client's buffer: 4194304 bytes verified"
check "verified RDMA read (client), with a figure" "server's buffer: 4194304 bytes verified \([0-9.]+ ms, [0-9]+ MB/s\)"
check "RDMA write figure" "wrote 4194304 bytes into the server's buffer \(RDMA write, [0-9.]+ ms, [0-9]+ MB/s\)"
check "send/receive figure" "2000 round trips of 4096 bytes, average round trip [0-9.]+ us"
check "dtest verdict" 'DAPL Test Complete. PASSED'
check "final verdict" '^demo: every step passed; all data verified$'
exit $bad
