#!/bin/sh
# Runs one libFuzzer fuzzer for CTest (fuzz/CMakeLists.txt) or by hand (docs/fuzzing.md).
#   run_fuzzer.sh replay <fuzzer> <seed dir> 0        every seed once (regression check)
#   run_fuzzer.sh fuzz   <fuzzer> <seed dir> <secs>   fuzz for <secs> from the seeds
# New inputs go to a scratch directory, never into the committed seed corpus. A finding
# (crash, leak, sanitizer report, timeout) exits non-zero and is kept in ./artifacts/.
# Extra libFuzzer flags can be passed in FUZZ_FLAGS (e.g. FUZZ_FLAGS=-jobs=2).
set -eu
mode=$1 fuzzer=$2 seeds=$3 secs=$4
mkdir -p artifacts
common="-timeout=30 -rss_limit_mb=2048 -artifact_prefix=artifacts/$(basename "$fuzzer")- -print_final_stats=1"
case $mode in
replay)
  # shellcheck disable=SC2086
  exec "$fuzzer" $common -runs=0 "$seeds" ;;
fuzz)
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/opendat-fuzz.XXXXXX")
  trap 'rm -rf "$scratch"' EXIT
  # shellcheck disable=SC2086
  "$fuzzer" $common ${FUZZ_FLAGS:-} -max_total_time="$secs" "$scratch" "$seeds" ;;
*)
  echo "usage: $0 replay|fuzz <fuzzer> <seed dir> <seconds>" >&2
  exit 2 ;;
esac
