#!/usr/bin/env bash
# README command 2: install dependencies, build, and run every test.
#
#   scripts/test.sh                          default build + all tests, then the asan and
#                                            ubsan builds, a Release build with Debian's
#                                            packaging flags (build only), then the verbs
#                                            provider's RDMA suite (real device, else the
#                                            soft-RoCE VM, which this prepares itself)
#   OPENDAT_SANITIZERS="asan ubsan tsan" scripts/test.sh   also the tsan build
#   OPENDAT_SANITIZERS="" scripts/test.sh    only the default build
#   OPENDAT_RELEASE_BUILD=0 scripts/test.sh  leave out the Release build
#   OPENDAT_VERBS_RDMA=0 scripts/test.sh     leave out the RDMA suite
#   OPENDAT_FUZZ=0 scripts/test.sh           leave out the short fuzzing run
#   OPENDAT_TEST_STEPS="presets release fuzz rdma" the steps to run (default: all four)
#
# Under CI (CI=true, as .ci/run is run) the RDMA suite must run: when it is skipped or left
# out, for whatever reason, the run fails.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh

case "${CI:-}" in "" | 0 | false) ci=false ;; *) ci=true ;; esac
sanitizers="${OPENDAT_SANITIZERS-asan ubsan}"
steps=" ${OPENDAT_TEST_STEPS:-presets release fuzz rdma} "
step() { [[ "$steps" == *" $1 "* ]]; }
status=0
# What failed, gathered as the run goes and printed again at its very end: a CI log is
# often read from its tail, and a failure early in an hour of output is easy to miss.
failures=()
# fail_ctest <what> <build dir>: the failed tests of the ctest run that just ended there
# (ctest leaves LastTestsFailed.log alone after a run without failures: clear_failed first).
clear_failed() { rm -f "$1/Testing/Temporary/LastTestsFailed.log"; }
fail_ctest() {
  status=1
  local failed
  failed=$(sed 's/^[0-9]*://' "$2/Testing/Temporary/LastTestsFailed.log" 2>/dev/null |
    paste -sd' ') || true
  failures+=("$1: ${failed:-failed (no test named: see above)}")
}
# fail_vm <what> <build dir>: also the lines of the VM run's log that say why (the suite's
# FAIL lines, the VM harness's own messages, a guest kernel's panic).
fail_vm() {
  fail_ctest "$@"
  local why
  why=$(grep -a -E '(^|: +)(=== )?FAIL|\[  FAILED  \]|\[opendat-vm\] (TIMEOUT|the VM|the guest|booting again|command exit status|error|not prepared)|console: .*(Kernel panic|RIP:|BUG:|Oops)' \
    "$2/Testing/Temporary/LastTest.log" 2>/dev/null | tail -n 25 | sed 's/^/    /') || true
  [ -z "$why" ] || failures+=("$why")
}
# run_ctest <fail_ctest|fail_vm> <what> <build dir> <command...>: one ctest run there, its
# failures recorded by the given function under <what>.
run_ctest() {
  local on_fail=$1 what=$2 dir=$3
  shift 3
  clear_failed "$dir"
  "$@" || "$on_fail" "$what" "$dir"
}
for preset in $(step presets && echo default $sanitizers); do
  started=$SECONDS
  echo "==== preset $preset: build"
  bash scripts/build.sh "$preset"
  echo "==== preset $preset: test"
  # The soft-RoCE VM tests (label vm) run once, below, not in every preset's run. The
  # package build (label package, about 2 minutes) checks packaging, which a sanitizer
  # cannot add to: it runs in the default preset only, to keep CI inside its time budget.
  exclude=vm
  [ "$preset" = default ] || exclude='vm|package'
  run_ctest fail_ctest "preset $preset" "build/$preset" \
    ctest --preset "$preset" --timeout 600 -LE "$exclude"
  # What the host fault matrix (tcp_faults) verified, one line per fault.
  grep -h '\[fault\]' "build/$preset/Testing/Temporary/LastTest.log" 2>/dev/null || true
  echo "==== preset $preset: $((SECONDS - started)) s (run so far: $SECONDS s)"
done

# Users and packagers build with -O3 (Release) or with Debian's hardening flags, where GCC
# warns about things -O2 does not see. Build that way once, warnings as errors, so such a
# warning is fixed here rather than found by them (build only: the tests ran above).
if step release && [ "${OPENDAT_RELEASE_BUILD:-1}" != 0 ]; then
  echo "==== Release build with dpkg-buildflags (build only, -Werror)"
  if ! bash scripts/build-release.sh build/release; then
    status=1
    failures+=("Release build with dpkg-buildflags")
  fi
fi

# A short fuzzing run (docs/fuzzing.md): the dat.conf and YAML parsers, DAT call sequences
# through libdat2 and the tcp wire, libFuzzer with ASan+UBSan, each for a bounded time, then
# the committed corpora replayed. Any finding fails the run.
if step fuzz && [ "${OPENDAT_FUZZ:-1}" != 0 ]; then
  echo "==== preset fuzz: build"
  bash scripts/build.sh fuzz
  echo "==== preset fuzz: test"
  run_ctest fail_ctest "preset fuzz" build/fuzz ctest --preset fuzz -j2 --timeout 600
fi

# The verbs provider needs an RDMA device. Its host tests ran above; its RDMA suite
# (test/verbs/rdma-suite.sh) runs on this machine's own device when it has one with an
# active port and an IPv4 address (test/verbs/run-native.sh), otherwise in the soft-RoCE VM
# (test/vm), which this prepares first: its host packages through apt-get, Debian's kernel
# (downloaded, never installed), the initramfs, all cached in ~/.cache/opendat-vm. It is
# skipped only where the VM cannot run at all (test/vm/available.sh says why).
rdma_skip() {  # rdma_skip <why> [<details, printed indented>]
  echo "verbs: RDMA suite SKIPPED: $1"
  [ -z "${2:-}" ] || printf '%s\n' "$2" | sed 's/^/  /'
  if $ci; then
    echo "verbs: FAILED: under CI (CI=$CI) the RDMA suite must run, and it did not"
    status=1
    failures+=("RDMA suite skipped under CI: $1")
  fi
}
if ! step rdma; then
  :
elif [ "${OPENDAT_VERBS_RDMA:-1}" = 0 ]; then
  rdma_skip "left out (OPENDAT_VERBS_RDMA=0)"
else
  echo "==== verbs provider: RDMA suite"
  san_builds=""
  # The suite knows how to run the asan and ubsan builds' provider under dtest.
  for preset in $sanitizers; do
    case "$preset" in
      asan | ubsan) [ -f "build/$preset/CMakeCache.txt" ] && san_builds="$san_builds $PWD/build/$preset" ;;
    esac
  done
  export OPENDAT_VERBS_SAN_BUILDS="${san_builds# }"
  # (available.sh's stdout: its answer and reasons; its stderr repeats prepare.sh's check)
  where=$(bash test/vm/available.sh --where 2>/dev/null) || true
  use_vm=false
  case "$where" in
    native*)
      echo "verbs: this machine has RDMA devices (${where#native }): the suite runs on them"
      rc=0
      bash test/verbs/run-native.sh build/default || rc=$?
      if [ "$rc" = 77 ]; then
        echo "verbs: no device here can run it (above); trying the soft-RoCE VM instead"
        # available.sh without --where looks at the VM even when the host has devices.
        use_vm=true
        where=$(bash test/vm/available.sh 2>/dev/null) || use_vm=false
      elif [ "$rc" != 0 ]; then
        status=1
        failures+=("RDMA suite on this machine's device (status $rc)")
      fi
      ;;
    vm*) use_vm=true ;;
  esac
  if ! $use_vm && [ "${where%% *}" != native ]; then
    # available.sh's own words: "no: ..." and one line per reason.
    rdma_skip "no RDMA device here, and the soft-RoCE VM cannot run on this machine:" \
      "$(printf '%s\n' "$where" | grep -v '^none$')"
  elif $use_vm; then
    echo "verbs: no usable RDMA device here: the suite runs in the soft-RoCE VM"
    printf '%s\n' "$where" | grep -v '^vm$' | sed 's/^/  /'
    echo "==== soft-RoCE VM: prepare (test/vm/prepare.sh)"
    started=$SECONDS
    rc=0
    bash test/vm/prepare.sh || rc=$?
    case $rc in
      0)
        echo "verbs: the soft-RoCE VM is ready ($((SECONDS - started)) s)"
        echo "==== soft-RoCE VM: the RDMA suite (ctest -R '^vm_verbs\$')"
        started=$SECONDS
        bash scripts/build.sh default -DOPENDAT_VM_TESTS=ON
        # Prepared above: from here on, a VM that does not run is a failure, not a skip.
        run_ctest fail_vm "soft-RoCE VM" build/default env OPENDAT_VM_REQUIRED=1 \
          ctest --test-dir build/default -R '^vm_verbs$' --output-on-failure --timeout 2400
        echo "verbs: RDMA suite in the VM: $((SECONDS - started)) s"
        # The tcp provider's netem fault matrix (test/tcp/netem_test.cpp) in the same VM
        # setup; -V so that the log shows each fault's "[fault] ..." line.
        echo "==== soft-RoCE VM: the netem fault matrix (ctest -R '^vm_netem\$')"
        started=$SECONDS
        run_ctest fail_vm "soft-RoCE VM" build/default env OPENDAT_VM_REQUIRED=1 \
          ctest --test-dir build/default -R '^vm_netem$' -V --timeout 2400
        echo "netem fault matrix in the VM: $((SECONDS - started)) s"
        # The harness's own retry of a boot that hangs or panics before the command starts.
        echo "==== soft-RoCE VM: the boot retry (ctest -R '^vm_boot_retry\$')"
        started=$SECONDS
        run_ctest fail_vm "soft-RoCE VM" build/default env OPENDAT_VM_REQUIRED=1 \
          ctest --test-dir build/default -R '^vm_boot_retry$' -V --timeout 2400
        echo "boot retry in the VM: $((SECONDS - started)) s"
        ;;
      2) rdma_skip "test/vm/prepare.sh could not obtain what the VM needs (its reason is above)" ;;
      *)
        echo "verbs: FAILED: test/vm/prepare.sh failed with status $rc"
        status=1
        failures+=("test/vm/prepare.sh (status $rc)")
        ;;
    esac
  fi
fi
if [ ${#failures[@]} -gt 0 ]; then
  echo "==== what failed (the details are above)"
  printf '%s\n' "${failures[@]}"
fi
echo "==== scripts/test.sh: $SECONDS s in all, status $status"
exit $status
