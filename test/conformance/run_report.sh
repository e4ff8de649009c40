#!/bin/sh
# Runs conformance_tests (all arguments passed on) and prints one line per case and a
# summary: PASS, UNSUPPORTED (a skipped case, with the reason the suite gave) and FAIL.
# Exit status: 0 when nothing failed and at least one case passed.
out=$("$@" 2>&1)
status=$?
printf '%s\n' "$out" | awk -v status="$status" '
  /^\[       OK \]/      { name = $4; pass++; print "PASS         " name }
  /^\[  FAILED  \] [A-Za-z]/ && !/listed below/ && !seen[$4]++ && $4 ~ /\./ { fail++; print "FAIL         " $4 }
  /UNSUPPORTED on /    { sub(/.*UNSUPPORTED on /, ""); why = $0 }
  /^\[  SKIPPED \] [A-Za-z]/ && $4 ~ /\./ && !skipped[$4]++ { unsup++; print "UNSUPPORTED  " $4 "  (" why ")" }
  END {
    printf "summary: %d PASS, %d UNSUPPORTED, %d FAIL\n", pass, unsup, fail
    exit (fail > 0 || pass == 0 || status != 0) ? 1 : 0
  }'
rc=$?
[ "$rc" -ne 0 ] && printf '%s\n' "$out"
exit "$rc"
