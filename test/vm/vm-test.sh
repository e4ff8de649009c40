#!/usr/bin/env bash
# A test that runs in the soft-RoCE VM, for CTest: checks that the VM can run here, prepares it
# if needed, then runs the command in it with run-in-vm.sh.
#
# Usage: test/vm/vm-test.sh [run-in-vm.sh options] [--] command [args...]
#
# Exit status: the command's; 77 (CTest's SKIP_RETURN_CODE for these tests) when the VM cannot
# run here (the reasons are printed: not x86-64, no apt, no root to install QEMU, kernel not
# downloadable, ...); 124 on the wall-clock limit; 125 when the VM failed to run the command.
# With OPENDAT_VM_REQUIRED=1 (scripts/test.sh, after preparing the VM) those skips are
# failures (status 1): CTest would otherwise count a skipped test as a pass.
set -euo pipefail
here=$(dirname "$0")
SKIP=77
if [ "${OPENDAT_VM_REQUIRED:-0}" = 1 ]; then SKIP=1; fi

if ! "$here/available.sh"; then
  [ "$SKIP" = 77 ] && echo "SKIPPED: the soft-RoCE VM is not available on this machine (see above)"
  [ "$SKIP" = 1 ] && echo "FAILED: the soft-RoCE VM is not available on this machine (see above) and OPENDAT_VM_REQUIRED=1"
  exit $SKIP
fi
rc=0
"$here/prepare.sh" || rc=$?
case $rc in
  0) ;;
  2)
    echo "$( [ "$SKIP" = 77 ] && echo SKIPPED || echo FAILED ): test/vm/prepare.sh could not obtain what the VM needs (see above)"
    exit $SKIP ;;
  *) echo "FAILED: test/vm/prepare.sh failed with status $rc"; exit 1 ;;
esac
exec "$here/run-in-vm.sh" "$@"
