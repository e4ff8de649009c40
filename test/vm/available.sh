#!/usr/bin/env bash
# Can the soft-RoCE VM run on this machine? Prints the answer and the reasons; changes nothing.
#
# Usage: test/vm/available.sh [--ready] [--quiet] [--where]
#   --ready   require that prepare.sh has already run (no install or download left to do)
#   --quiet   print nothing when available (reasons for "no" are always printed)
#   --where   where RDMA tests can run: first line "native <devices>" when this host has an
#             RDMA device with an ACTIVE port (the VM is then not examined), else "vm" when the
#             VM can run, else "none" followed by the reasons (exit status 1)
#
# Exit status 0: available (first line "yes: ..."), possibly after test/vm/prepare.sh, which
# this then names; 1: not available (first line "no: <why>", one reason per following line).
# Whether the Debian mirror is reachable is only known when prepare.sh tries: it exits 2 when a
# download fails, and vm-test.sh turns that into a skipped test as well.
#
# It also mentions RDMA devices of the host itself, for a caller that prefers them to the VM.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

need_ready=false quiet=false where=false
for a in "$@"; do
  case "$a" in
    --ready) need_ready=true ;;
    --where) where=true ;;
    --quiet) quiet=true ;;
    -h|--help) vm_usage; exit 0 ;;
    *) vm_die "unknown argument: $a" ;;
  esac
done

# RDMA devices of the host itself with an ACTIVE port.
native=()
for d in /sys/class/infiniband/*; do
  [ -e "$d" ] || continue
  if grep -qs ACTIVE "$d"/ports/*/state; then native+=("${d##*/}"); fi
done
if $where && [ ${#native[@]} -gt 0 ]; then
  echo "native ${native[*]}"
  exit 0
fi

no=() todo=()
join() { local IFS=';'; printf '%s' "$*" | sed 's/;/; /g'; }
# The guest runs the host's own binaries: they must be x86-64 (the emulated machine).
arch=$(uname -m)
[ "$arch" = x86_64 ] || no+=("the host is $arch; the VM runs the host's x86-64 user space")
[ "$(uname -s)" = Linux ] || no+=("not Linux")
command -v dpkg-query >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 ||
  no+=("not a Debian-like system (no dpkg/apt-get): the harness takes its kernel and tools from apt")

if [ ${#no[@]} -eq 0 ]; then
  can_root=true
  [ "$(id -u)" -eq 0 ] || { command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; } || can_root=false
  # A fresh container has no apt lists until `apt-get update`: no package has a candidate
  # yet, which says nothing about whether the sources have it. prepare.sh updates them first.
  lists_pending=false
  if vm_apt_lists_empty; then
    if $can_root; then
      lists_pending=true
      todo+=("apt-get update (apt has no package lists yet)")
    else
      no+=("apt has no package lists, and no root or passwordless sudo to run apt-get update")
    fi
  fi
  mapfile -t missing < <(vm_missing_packages)
  if [ ${#no[@]} -eq 0 ] && [ ${#missing[@]} -gt 0 ]; then
    if ! $can_root; then
      no+=("missing host packages (${missing[*]}) and no root or passwordless sudo to install them")
    else
      unknown=()
      $lists_pending || for p in "${missing[@]}"; do [ -n "$(vm_candidate "$p")" ] || unknown+=("$p"); done
      if [ ${#unknown[@]} -gt 0 ]; then
        no+=("packages not in the configured apt sources: ${unknown[*]}")
      else
        todo+=("install ${missing[*]}")
      fi
    fi
  fi

  if ! prepare_out=$("$VM_HARNESS_DIR/prepare.sh" --check 2>&1); then
    # Not prepared: is there a kernel package to fetch?
    if [ ${#missing[@]} -eq 0 ] || [ ${#todo[@]} -gt 0 ]; then
      if $lists_pending; then
        todo+=("download a kernel package" "build the initramfs in $VM_CACHE")
      elif k=$(vm_resolve_kernel_pkg); then
        [ -f "$VM_CACHE/kernel/${k% *}_${k#* }/.complete" ] || todo+=("download ${k% *} ${k#* }")
        todo+=("build the initramfs in $VM_CACHE")
      elif [ -f "$VM_CURRENT_ENV" ]; then
        todo+=("rebuild from the cached kernel")
      else
        no+=("no kernel package (${OPENDAT_VM_KERNEL_PKG:-linux-image-6.12-amd64 or linux-image-amd64}) in the apt sources, and none cached in $VM_CACHE")
      fi
    fi
    [ -n "$prepare_out" ] && ! $quiet && printf '%s\n' "$prepare_out" | sed 's/^/  /' >&2
  fi

  if command -v qemu-system-x86_64 >/dev/null 2>&1 &&
     ! grep -q virtio-9p <<<"$(qemu-system-x86_64 -device help 2>/dev/null)"; then
    no+=("this qemu-system-x86_64 has no virtio-9p (virtfs) support")
  fi
fi

if $need_ready && [ ${#todo[@]} -gt 0 ]; then
  no+=("not prepared; test/vm/prepare.sh would: $(join "${todo[@]}")")
fi

if [ ${#no[@]} -gt 0 ]; then
  $where && echo "none"
  echo "no: the soft-RoCE VM cannot run here"
  printf '  - %s\n' "${no[@]}"
  exit 1
fi

$where && echo "vm"
if ! $quiet; then
  if vm_kvm_usable; then accel="KVM"; else accel="TCG (no usable KVM: slower, 10-20x in the guest)"; fi
  if [ ${#todo[@]} -gt 0 ]; then
    echo "yes: after test/vm/prepare.sh, which will: $(join "${todo[@]}")"
  else
    # shellcheck disable=SC1090
    . "$VM_CURRENT_ENV"
    echo "yes: ready (kernel ${KVER:-?} from ${PKG:-?} ${PKGVER:-?}, cache $VM_CACHE)"
  fi
  echo "  accelerator: $accel"
  if [ ${#native[@]} -gt 0 ]; then
    echo "  note: this host has RDMA devices with an active port: ${native[*]}"
  fi
fi
exit 0
