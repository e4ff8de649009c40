#!/usr/bin/env bash
# vm_boot_retry: the harness boots the guest again when a boot fails before the command starts.
# A boot that hangs (OPENDAT_VM_HANG_BOOTS: the second-stage init sleeps; on a CI machine the
# emulation once lost vCPU 0's timer interrupt 3 s into a boot) is killed after
# OPENDAT_VM_BOOT_LIMIT seconds; a boot whose kernel panics (OPENDAT_VM_PANIC_BOOTS) ends by
# itself. Either way the next boot runs the command and its status comes back; when every
# boot fails, the status is 125.
#
# Usage: test/vm/boot-retry-test.sh [vm-test.sh options]   (status 0: all cases as expected)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# The command runs in the caller's folder, and nothing is shared (--no-share): a build tree
# under /tmp (a CI's clone) does not exist in the guest, whose /tmp is its own. / does.
cd /
failed=0

# case <name> <expected status> <expected line (grep -E)> <env...>
check() {
  local name=$1 want=$2 line=$3 out rc
  shift 3
  out=$(env "$@" "$here/vm-test.sh" "${opts[@]}" -- sh -c 'echo command ran; exit 7' 2>&1)
  rc=$?
  if [ "$rc" = 77 ]; then printf '%s\n' "$out"; exit 77; fi
  if [ "$rc" != "$want" ] || ! grep -Eq "$line" <<<"$out"; then
    echo "FAIL $name: status $rc (want $want), line /$line/ $(grep -Eq "$line" <<<"$out" && echo found || echo missing)"
    printf '%s\n' "$out" | sed 's/^/  | /'
    failed=1
  else
    echo "ok   $name: status $rc; $(grep -E -m1 "$line" <<<"$out")"
  fi
}

opts=("$@")
# The limit applies to the good boot too: 60 s leaves a loaded machine's TCG boot (10-20 s
# when idle) room.
check "a hung boot, then a good one" 7 'booting again \(boot 2 of 2\)' \
  OPENDAT_VM_BOOT_TRIES=2 OPENDAT_VM_BOOT_LIMIT=60 OPENDAT_VM_HANG_BOOTS=1
check "a panicking boot, then a good one" 7 'booting again \(boot 2 of 2\)' \
  OPENDAT_VM_BOOT_TRIES=2 OPENDAT_VM_PANIC_BOOTS=1
check "every boot hung" 125 'did not start the command within 20s \(boots: 2, hung: 2' \
  OPENDAT_VM_BOOT_TRIES=2 OPENDAT_VM_BOOT_LIMIT=20 OPENDAT_VM_HANG_BOOTS=2
exit $failed
