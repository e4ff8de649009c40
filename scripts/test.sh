#!/usr/bin/env bash
# README command 2: install dependencies, build, and run every test.
#
#   scripts/test.sh                          default build + all tests, then the asan and
#                                            ubsan builds, then the verbs provider's RDMA
#                                            suite (real device, else soft-RoCE VM)
#   OPENDAT_SANITIZERS="asan ubsan tsan" scripts/test.sh   also the tsan build
#   OPENDAT_SANITIZERS="" scripts/test.sh    only the default build
#   OPENDAT_VERBS_RDMA=0 scripts/test.sh     leave out the RDMA suite
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh

sanitizers="${OPENDAT_SANITIZERS-asan ubsan}"
status=0
for preset in default $sanitizers; do
  echo "==== preset $preset: build"
  bash scripts/build.sh "$preset"
  echo "==== preset $preset: test"
  if ! ctest --preset "$preset" --timeout 600; then
    status=1
  fi
done

# The verbs provider needs an RDMA device. Its host tests ran above; its RDMA suite
# (test/verbs/rdma-suite.sh) runs on this machine's own device when it has one with an
# active port and an IPv4 address (test/verbs/run-native.sh), otherwise in the soft-RoCE VM
# (test/vm), otherwise it is skipped with the reason printed.
if [ "${OPENDAT_VERBS_RDMA:-1}" != 0 ]; then
  echo "==== verbs provider: RDMA suite"
  san_builds=""
  # The suite knows how to run the asan and ubsan builds' provider under dtest.
  for preset in $sanitizers; do
    case "$preset" in asan | ubsan) san_builds="$san_builds $PWD/build/$preset" ;; esac
  done
  export OPENDAT_VERBS_SAN_BUILDS="${san_builds# }"
  where=$(bash test/vm/available.sh --where 2>&1 || true)
  try_vm=false
  case "$where" in
    native*)
      echo "verbs: this machine has RDMA devices (${where#native }): the suite runs on them"
      rc=0
      bash test/verbs/run-native.sh build/default || rc=$?
      if [ "$rc" = 77 ]; then
        echo "verbs: no device here can run it (above); trying the soft-RoCE VM instead"
        try_vm=true
      elif [ "$rc" != 0 ]; then
        status=1
      fi
      ;;
    vm*) try_vm=true ;;
    *)
      echo "verbs: RDMA suite SKIPPED: no RDMA device and no soft-RoCE VM here:"
      echo "$where" | sed 's/^/  /'
      ;;
  esac
  if $try_vm; then
    if ! bash test/vm/available.sh --quiet; then
      echo "verbs: RDMA suite SKIPPED: the soft-RoCE VM cannot run here (reasons above)"
    else
      cmake --preset default -G Ninja -DOPENDAT_VM_TESTS=ON >/dev/null
      cmake --build --preset default -j "$(nproc)"
      if ! ctest --test-dir build/default -R '^vm_verbs$' --output-on-failure --timeout 2400; then
        status=1
      fi
    fi
  fi
fi
exit $status
