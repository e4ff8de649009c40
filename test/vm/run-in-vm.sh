#!/usr/bin/env bash
# Run one command inside the soft-RoCE VM (QEMU, Debian's kernel, rdma_rxe on dummy0) and pass
# its output and exit status back.
#
# Usage: test/vm/run-in-vm.sh [options] [--] command [args...]
#   --share DIR     share DIR read-write at the same path (repeatable; adds to OPENDAT_VM_SHARE)
#   --no-share      share nothing read-write (ignores OPENDAT_VM_SHARE and the default)
#   --timeout SEC   wall-clock limit of the whole VM run (default OPENDAT_VM_TIMEOUT or 1200)
#   --log FILE      serial console log (default OPENDAT_VM_LOG or $cache/logs/console-*.log)
#   --quiet         no harness messages, only the command's own output
#
# The guest's root is the host's / (read-only, with a throw-away tmpfs overlay), so every host
# binary, library and build tree is there unchanged. Only the shared folders are writable
# through to the host; when neither --share, --no-share nor OPENDAT_VM_SHARE is given, the
# current folder is shared (unless it is /). The command runs as root in the guest, in the
# caller's current folder, with `ulimit -l unlimited` and these variables of the caller:
# PATH LD_LIBRARY_PATH LD_PRELOAD HOME USER LOGNAME LANG LC_* TZ TERM, DAT_* DAPL_* GTEST_*
# OPENDAT_* (DAT_OVERRIDE among them), *SAN_OPTIONS, CTEST_*, plus the names in OPENDAT_VM_ENV.
#
# Inside the guest: dummy0 has OPENDAT_VM_ADDR (default 192.168.77.1/24; it exists only in the
# VM, which has no network card) with MTU OPENDAT_VM_MTU (default 1500: active MTU 1024; 4200
# gives 4096), and rxe0 is ACTIVE on it. Server and client both use rxe0 and that address.
#
# Other variables: OPENDAT_VM_MEM (MiB, default 2048), OPENDAT_VM_SMP (default: host cores,
# at most 2), OPENDAT_VM_ACCEL (auto, tcg or kvm; auto uses KVM only with vmx/svm in
# /proc/cpuinfo and a usable /dev/kvm), OPENDAT_VM_NICE (default 10), OPENDAT_VM_CACHE,
# OPENDAT_VM_BOOT_TRIES (boots in all when the guest kernel panics or hangs before the command
# starts; default 3), OPENDAT_VM_BOOT_LIMIT (seconds a boot may take before it counts as hung;
# default 180), OPENDAT_VM_PANIC_BOOTS and OPENDAT_VM_HANG_BOOTS (tests of that retry: the
# first N boots panic, or hang).
#
# Exit status: the command's; 124 when the wall-clock limit was hit (QEMU is killed); 125 when
# the VM did not get to run the command (see the console log); 2 when not prepared.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

timeout_s=${OPENDAT_VM_TIMEOUT:-1200}
log_file=${OPENDAT_VM_LOG:-}
quiet=false
shares=()
share_default=true
if [ -n "${OPENDAT_VM_SHARE+x}" ]; then
  share_default=false
  IFS=: read -r -a shares <<<"${OPENDAT_VM_SHARE}"
fi
while [ $# -gt 0 ]; do
  case "$1" in
    --share) [ $# -ge 2 ] || vm_die "--share needs a folder"; shares+=("$2"); share_default=false; shift 2 ;;
    --no-share) shares=(); share_default=false; OPENDAT_VM_SHARE=; shift ;;
    --timeout) [ $# -ge 2 ] || vm_die "--timeout needs seconds"; timeout_s=$2; shift 2 ;;
    --log) [ $# -ge 2 ] || vm_die "--log needs a file"; log_file=$2; shift 2 ;;
    --quiet) quiet=true; shift ;;
    -h|--help) vm_usage; exit 0 ;;
    --) shift; break ;;
    -*) vm_die "unknown option $1 (use -- before the command)" ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || vm_die "no command given (see --help)"
[[ $timeout_s =~ ^[1-9][0-9]*$ ]] || vm_die "the timeout is whole seconds, not $timeout_s"
say() { $quiet || vm_log "$@"; }

# --- What prepare.sh made --------------------------------------------------------------------
[ -f "$VM_CURRENT_ENV" ] || { vm_log "not prepared: run test/vm/prepare.sh first"; exit 2; }
KVER='' KERNEL='' INITRD=''
# shellcheck disable=SC1090
. "$VM_CURRENT_ENV"
if [ ! -f "$KERNEL" ] || [ ! -f "$INITRD" ]; then vm_log "cache incomplete: run test/vm/prepare.sh"; exit 2; fi
command -v qemu-system-x86_64 >/dev/null || { vm_log "qemu-system-x86_64 missing: run test/vm/prepare.sh"; exit 2; }

# --- Shares ----------------------------------------------------------------------------------
if $share_default && [ "$PWD" != / ]; then shares=("$PWD"); fi
real_shares=()
for s in ${shares[@]+"${shares[@]}"}; do
  [ -n "$s" ] || continue
  [ -d "$s" ] || vm_die "share $s is not a folder"
  s=$(cd "$s" && pwd -P)
  [ "$s" != / ] || vm_die "refusing to share / read-write"
  case "$s" in *[[:space:]]*) vm_die "share paths with blanks are not supported: $s" ;; esac
  real_shares+=("$s")
done

# --- Control share: the guest's second-stage init, its settings, the command ----------------
mkdir -p "$VM_CACHE/run"
ctl=$(mktemp -d "$VM_CACHE/run/ctl.XXXXXX")
qpid='' tails=()
# shellcheck disable=SC2317  # called from the trap
cleanup() {
  if [ -n "$qpid" ]; then kill "$qpid" 2>/dev/null || true; fi
  for t in ${tails[@]+"${tails[@]}"}; do kill "$t" 2>/dev/null || true; done
  rm -rf "$ctl"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

cp "$VM_HARNESS_DIR/guest-init.sh" "$ctl/guest-init.sh"
cat >"$ctl/vm.conf" <<EOF
VM_SHARES="${real_shares[*]:-}"
VM_ADDR="${OPENDAT_VM_ADDR:-192.168.77.1/24}"
VM_MTU="${OPENDAT_VM_MTU:-1500}"
EOF

# The command script, run by the host's bash inside the chroot.
{
  echo '# generated by run-in-vm.sh'
  extra=" ${OPENDAT_VM_ENV:-} "
  while IFS= read -r name; do
    case "$name" in
      PATH|LD_LIBRARY_PATH|LD_PRELOAD|HOME|USER|LOGNAME|LANG|LC_*|TZ|TERM) ;;
      DAT_*|DAPL_*|GTEST_*|OPENDAT_*|*SAN_OPTIONS|CTEST_*) ;;
      *) case "$extra" in *" $name "*) ;; *) continue ;; esac ;;
    esac
    printf 'export %s=%q\n' "$name" "${!name}"
  done < <(compgen -e)
  printf 'cd -- %q || { echo "opendat-vm: cannot enter %s in the guest" >&2; exit 125; }\n' "$PWD" "$PWD"
  echo 'ulimit -l unlimited'
  printf 'exec'; printf ' %q' "$@"; echo
} >"$ctl/cmd.sh"
: >"$ctl/stdout"; : >"$ctl/stderr"

# --- QEMU ------------------------------------------------------------------------------------
if [ -z "$log_file" ]; then
  mkdir -p "$VM_CACHE/logs"
  # Keep the 20 newest console logs.
  find "$VM_CACHE/logs" -name 'console-*.log' -printf '%T@ %p\n' 2>/dev/null | sort -rn |
    tail -n +20 | cut -d' ' -f2- | xargs -r rm -f
  log_file="$VM_CACHE/logs/console-$(date -u +%Y%m%dT%H%M%SZ)-$$.log"
fi
mkdir -p "$(dirname "$log_file")"
: >"$log_file"

case "${OPENDAT_VM_ACCEL:-auto}" in
  auto) if vm_kvm_usable; then accel=kvm; else accel=tcg; fi ;;
  kvm|tcg) accel=$OPENDAT_VM_ACCEL ;;
  *) vm_die "OPENDAT_VM_ACCEL must be auto, kvm or tcg" ;;
esac
if [ "$accel" = kvm ]; then accel_args=(-accel kvm -cpu host)
else accel_args=(-accel "tcg,thread=multi" -cpu max)
fi
cores=$(nproc 2>/dev/null || echo 1)
smp=${OPENDAT_VM_SMP:-$(( cores < 2 ? cores : 2 ))}

# no_timer_check: under TCG on a loaded host the kernel's early check of the timer
# interrupt can miss its window and panic ("IO-APIC + timer doesn't work"); it did, once,
# while a build ran beside the VM. The check guards against broken hardware, not QEMU's.
cmdline="console=ttyS0 panic=-1 quiet loglevel=4 rdinit=/init no_timer_check"
qemu=(qemu-system-x86_64 -nodefaults -no-reboot -display none -monitor none -nic none
  "${accel_args[@]}" -smp "$smp" -m "${OPENDAT_VM_MEM:-2048}"
  -kernel "$KERNEL" -initrd "$INITRD"
  # append=on: a second boot (below) adds to the log instead of truncating it.
  -chardev "file,id=console,path=${log_file//,/,,},append=on" -serial chardev:console
  -virtfs "local,path=/,mount_tag=root,security_model=none,readonly=on,multidevs=remap"
  -virtfs "local,path=$ctl,mount_tag=ctl,security_model=none")
i=0
for s in ${real_shares[@]+"${real_shares[@]}"}; do
  qemu+=(-virtfs "local,path=$s,mount_tag=rw$i,security_model=none,multidevs=remap")
  i=$((i + 1))
done

# A guest that has not started the command this long after QEMU started is hung, not slow:
# under TCG it is ready in 10-20 s. On a CI machine, under TCG, vCPU 0 once went idle 3 s into
# the boot and its timer interrupt never came (RCU stall warnings from then on, "timer wakeup
# didn't happen"); the run then sat out its whole 1500 s limit. Such a boot is killed and
# retried like a panicking one.
boot_limit=${OPENDAT_VM_BOOT_LIMIT:-180}
[[ $boot_limit =~ ^[1-9][0-9]*$ ]] || vm_die "OPENDAT_VM_BOOT_LIMIT must be whole seconds"

# One boot of the guest (wall-clock limit $1, kernel command line $2); sets qrc (QEMU's status)
# and boot_hung (true when the boot limit killed it).
boot_once() {
  : >"$ctl/stdout"; : >"$ctl/stderr"
  rm -f "$ctl/status" "$ctl/boot-seconds" "$ctl/end-seconds" "$ctl/boot-hung"
  # nice: the machine is shared. timeout kills QEMU at the limit (and hard 10 s later).
  nice -n "${OPENDAT_VM_NICE:-10}" timeout -k 10 "$1" "${qemu[@]}" -append "$2" \
    </dev/null >>"$log_file" 2>&1 &
  qpid=$!
  # The command's output, live, on our own stdout and stderr.
  tail -n +1 -s 0.2 -f --pid="$qpid" "$ctl/stdout" & tails+=($!)
  tail -n +1 -s 0.2 -f --pid="$qpid" "$ctl/stderr" >&2 & tails+=($!)
  # The boot watchdog: gone once the guest reports it is ready (or QEMU ended).
  # Off when the run's own limit comes first or close after (its TIMEOUT, 124, says more).
  local limit=$boot_limit
  [ "$(($1 - limit))" -ge 30 ] || limit=$(($1 + 60))
  (
    waited=0
    while kill -0 "$qpid" 2>/dev/null && [ ! -f "$ctl/boot-seconds" ] && [ ! -f "$ctl/status" ]; do
      if [ "$waited" -ge "$limit" ]; then
        # Looked at once more: a guest that got ready in the last second runs its command.
        [ ! -f "$ctl/boot-seconds" ] || break
        : >"$ctl/boot-hung"
        kill "$qpid" 2>/dev/null || true
        break
      fi
      sleep 1
      waited=$((waited + 1))
    done
  ) & tails+=($!)
  qrc=0
  wait "$qpid" || qrc=$?
  qpid=
  for t in "${tails[@]}"; do wait "$t" 2>/dev/null || true; done
  tails=()
  boot_hung=false
  if [ -f "$ctl/boot-hung" ] && [ ! -f "$ctl/boot-seconds" ]; then boot_hung=true; fi
}

say "booting $KVER ($accel, $smp cpu, timeout ${timeout_s}s), console log $log_file"
say "read-write: ${real_shares[*]:-(nothing)}; command: $*"
start=$(date +%s.%N)
# A guest kernel that panics before the command starts (no boot-seconds yet) is a fault of
# the emulation, not of the command: under TCG, Debian's kernel once died of a page fault in
# an interrupt 1.9 s into the boot, on a CI machine, in a run whose other boots were fine.
# So is a boot that has not started the command after OPENDAT_VM_BOOT_LIMIT seconds (see
# boot_limit). Boot again, up to OPENDAT_VM_BOOT_TRIES times in all (default 3), within the
# same wall-clock limit. A panic after the command started is reported, never retried: the
# command may have caused it, and its output has already been passed on.
tries=${OPENDAT_VM_BOOT_TRIES:-3}
[[ $tries =~ ^[1-9][0-9]*$ ]] || vm_die "OPENDAT_VM_BOOT_TRIES must be a positive number"
[[ ${OPENDAT_VM_PANIC_BOOTS:-0} =~ ^[0-9]+$ ]] || vm_die "OPENDAT_VM_PANIC_BOOTS must be a number"
[[ ${OPENDAT_VM_HANG_BOOTS:-0} =~ ^[0-9]+$ ]] || vm_die "OPENDAT_VM_HANG_BOOTS must be a number"
hangs=0
started_s=$SECONDS
secs_left() { echo $((timeout_s - (SECONDS - started_s))); }
attempt=1
while :; do
  left=$(secs_left)
  [ "$left" -ge 1 ] || left=1
  seen=$(wc -l <"$log_file")
  # OPENDAT_VM_PANIC_BOOTS=N (a test of this retry): the first N boots get an init that
  # does not exist, and the kernel panics at once.
  # OPENDAT_VM_HANG_BOOTS=N (a test of the boot watchdog): the first N boots' second-stage
  # init sleeps instead of starting the command.
  if [ "$attempt" -le "${OPENDAT_VM_HANG_BOOTS:-0}" ]; then : >"$ctl/hang"; else rm -f "$ctl/hang"; fi
  if [ "$attempt" -le "${OPENDAT_VM_PANIC_BOOTS:-0}" ]; then
    boot_once "$left" "${cmdline/rdinit=\/init/rdinit=/opendat-vm-no-such-init}"
  else
    boot_once "$left" "$cmdline"
  fi
  if $boot_hung; then hangs=$((hangs + 1)); fi
  if ! $boot_hung; then
    if [ "$qrc" -eq 124 ] || [ "$qrc" -eq 137 ]; then break; fi
    if [ -f "$ctl/boot-seconds" ] || [ -f "$ctl/status" ]; then break; fi
  fi
  this_boot=$(tail -n +"$((seen + 1))" "$log_file")
  if ! $boot_hung; then
    grep -aq 'Kernel panic' <<<"$this_boot" || break
    # Our own second-stage init dying is a harness bug, not the emulation's: no retry.
    if grep -aq 'Attempted to kill init' <<<"$this_boot"; then break; fi
  fi
  [ "$attempt" -lt "$tries" ] || break
  # Too little time left for a boot and the command: end as a failed boot (125).
  [ "$(secs_left)" -ge 30 ] || break
  if $boot_hung; then
    vm_log "the guest did not start the command within ${boot_limit}s of the boot (boot $attempt of $tries; console log: $log_file):"
    # (|| true: a console with none of these lines must not end the script: pipefail.)
    { grep -a -E 'rcu|BUG:|INFO:|watchdog|guest\[' <<<"$this_boot" || true; } | tail -n 4 |
      sed 's/^/  console: /' >&2
  else
    vm_log "the guest kernel panicked before the command started (boot $attempt of $tries; console log: $log_file):"
    grep -a -m 4 -E 'BUG:|Oops|RIP:|Kernel panic' <<<"$this_boot" | sed 's/^/  console: /' >&2
  fi
  attempt=$((attempt + 1))
  vm_log "booting again (boot $attempt of $tries)"
  echo "==== opendat-vm: boot $attempt of $tries ====" >>"$log_file"
done
end=$(date +%s.%N)
elapsed=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')

if $boot_hung; then
  vm_log "the guest did not start the command within ${boot_limit}s (boots: $attempt, hung: $hangs, the others panicked); console log: $log_file"
  tail -n 20 "$log_file" | sed 's/^/  console: /' >&2
  exit 125
fi
if [ "$qrc" -eq 124 ] || [ "$qrc" -eq 137 ]; then
  vm_log "TIMEOUT: the VM run exceeded ${timeout_s}s and QEMU was killed (console log: $log_file)"
  tail -n 20 "$log_file" | sed 's/^/  console: /' >&2
  exit 124
fi
if [ ! -f "$ctl/status" ]; then
  vm_log "the VM ended (QEMU status $qrc) without running the command to its end; console log: $log_file"
  tail -n 30 "$log_file" | sed 's/^/  console: /' >&2
  exit 125
fi
rc=$(cat "$ctl/status")
boot=$(cat "$ctl/boot-seconds" 2>/dev/null || echo '?')
guest_end=$(cat "$ctl/end-seconds" 2>/dev/null || echo '?')
say "command exit status $rc; VM run ${elapsed}s (guest uptime: ready ${boot}s, done ${guest_end}s)"
exit "$rc"
