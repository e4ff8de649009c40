# shellcheck shell=bash
# Shared settings and helpers of the soft-RoCE VM harness (test/vm/*.sh source this file).
# Nothing here has side effects beyond defining variables and functions.
# shellcheck disable=SC2034  # the variables are used by the scripts that source this file

# Where this harness lives (test/vm/ of the source tree).
VM_HARNESS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# Cache folder for everything large: the unpacked Debian kernel, its modules, the initramfs.
# It never goes into the repository.
VM_CACHE=${OPENDAT_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/opendat-vm}

# The file prepare.sh writes last, once the kernel and initramfs are complete; run-in-vm.sh
# reads it. It is plain KEY=value lines (no spaces in values).
VM_CURRENT_ENV="$VM_CACHE/current.env"

# Packages the harness needs on the host. The guest runs the host's own user space (the host's
# root is its root file system), so everything the tests run inside the VM is installed here.
VM_HOST_PACKAGES=(
  qemu-system-x86      # the emulator (qemu-system-x86_64 with virtfs/9p)
  busybox-static       # /init of the initramfs, and depmod to index the kernel modules
  cpio                 # packs the initramfs
  xz-utils zstd        # decompress .ko.xz / .ko.zst modules (busybox modprobe wants plain .ko)
  iproute2             # ip and rdma (rdma link add rxe0 type rxe netdev dummy0)
  kmod                 # modinfo, to check the modules
  rdma-core ibverbs-providers libibverbs-dev librdmacm-dev
  ibverbs-utils rdmacm-utils perftest     # smoke tests: ibv_devinfo, ibv_rc_pingpong, rping, ib_*
  libdapl2 dapl2-utils                    # the reference stack: libdat2, libdaplofa, dtest
)

# Kernel modules the initramfs carries (each with its dependency closure from modules.dep).
# Names that are built into a given kernel, or do not exist in it, are skipped.
VM_MODULES=(
  virtio_pci virtio_net 9pnet_virtio 9p netfs overlay dummy
  crc32_generic crc32-pclmul crc32_pclmul crc32c_generic crc32c-intel crc32c_intel libcrc32c
  ib_core ib_uverbs ib_umad ib_cm iw_cm rdma_cm rdma_ucm rdma_rxe
  veth sch_netem    # the netem fault matrix (vm_netem): two namespaces, tc netem on the link
)

vm_log()  { printf '[opendat-vm] %s\n' "$*" >&2; }
vm_die()  { printf '[opendat-vm] error: %s\n' "$*" >&2; exit 1; }

# Run a command as root: directly when we are root, else through passwordless sudo.
vm_as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo -n "$@"
  else return 126
  fi
}

# The host packages from VM_HOST_PACKAGES that are not installed (one per line).
vm_missing_packages() {
  local installed
  # One dpkg-query for all (unknown packages print nothing on stdout).
  installed=$(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${VM_HOST_PACKAGES[@]}" 2>/dev/null |
              awk '$2 == "installed" { print $1 }' || true)
  local p
  for p in "${VM_HOST_PACKAGES[@]}"; do
    grep -qxF "$p" <<<"$installed" || printf '%s\n' "$p"
  done
}

# True when apt has no package lists at all (a fresh container: `apt-get update` never ran),
# so that no package has a candidate yet.
vm_apt_lists_empty() {
  ! compgen -G '/var/lib/apt/lists/*_Packages*' >/dev/null
}

# Candidate version of a package from the configured apt sources ("" when there is none).
vm_candidate() {
  local c
  c=$(apt-cache policy "$1" 2>/dev/null | awk '/^ *Candidate:/ {print $2; exit}')
  [ "$c" = "(none)" ] && c=
  printf '%s' "$c"
}

# Resolve the kernel image package to download: OPENDAT_VM_KERNEL_PKG if set (a meta package
# such as linux-image-amd64 or a versioned one such as linux-image-6.1.0-56-amd64), else the
# 6.12 backport if the sources have it (rxe behaves better under TCG there), else what
# linux-image-amd64 depends on. Prints "<package> <version>", or nothing.
vm_resolve_kernel_pkg() {
  local metas pkg ver dep
  if [ -n "${OPENDAT_VM_KERNEL_PKG:-}" ]; then metas=("$OPENDAT_VM_KERNEL_PKG")
  else metas=(linux-image-6.12-amd64 linux-image-amd64)
  fi
  for pkg in "${metas[@]}"; do
    ver=$(vm_candidate "$pkg")
    [ -n "$ver" ] || continue
    # A meta package depends on exactly one versioned linux-image-* package: follow it.
    dep=$(apt-cache show "$pkg=$ver" 2>/dev/null | awk -F': ' '/^Depends:/ {print $2; exit}' |
          tr ',' '\n' | sed -n 's/^ *\(linux-image-[^ ]*\).*/\1/p' | head -n1)
    if [ -n "$dep" ]; then
      pkg=$dep; ver=$(vm_candidate "$pkg")
      [ -n "$ver" ] || continue
    fi
    printf '%s %s\n' "$pkg" "$ver"
    return 0
  done
  return 1
}

# Does this host have usable KVM? Only with vmx/svm in /proc/cpuinfo and a read-write /dev/kvm
# (a /dev/kvm without them makes -cpu host abort and other models hang).
vm_kvm_usable() {
  grep -qwE 'vmx|svm' /proc/cpuinfo 2>/dev/null && [ -r /dev/kvm ] && [ -w /dev/kvm ]
}

# Print the comment block at the top of the calling script (its usage text).
vm_usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
