#!/usr/bin/env bash
# Prepare the soft-RoCE VM: host packages, a Debian kernel unpacked into the cache, its module
# index, and an initramfs. Idempotent: when everything is in place it only checks and exits.
#
# Usage: test/vm/prepare.sh [--check]
#   --check   change nothing; exit 0 when prepared, 1 when not (and say what is missing).
#
# Environment:
#   OPENDAT_VM_CACHE       cache folder (default ${XDG_CACHE_HOME:-~/.cache}/opendat-vm)
#   OPENDAT_VM_KERNEL_PKG  kernel package (meta or versioned) instead of the automatic choice
#
# Exit status: 0 ready; 2 when something could not be obtained (apt-get install or download
# failed, no root for apt-get, no kernel package in the apt sources): the VM is unavailable
# here; 1 for any other failure.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

check_only=false
case "${1:-}" in
  --check) check_only=true ;;
  "") ;;
  -h|--help) vm_usage; exit 0 ;;
  *) vm_die "unknown argument: $1" ;;
esac

unavailable() { printf '[opendat-vm] unavailable: %s\n' "$*" >&2; exit 2; }

# apt-get update, at most once per run: on a fresh machine apt has no lists yet, and stale
# lists name package versions the mirror no longer has (install and download then fail).
apt_updated=false
apt_update_once() {
  $apt_updated && return 1
  apt_updated=true
  vm_log "running apt-get update ($1)"
  vm_as_root apt-get update -q >&2 || unavailable "apt-get update failed (no root, or no access to the Debian mirror?)"
}
if vm_apt_lists_empty && ! $check_only; then apt_update_once "apt has no package lists yet"; fi

# --- 1. Host packages ------------------------------------------------------------------------
mapfile -t missing < <(vm_missing_packages)
if [ "${#missing[@]}" -gt 0 ]; then
  $check_only && { vm_log "missing host packages: ${missing[*]}"; exit 1; }
  vm_log "installing host packages: ${missing[*]}"
  install() {
    DEBIAN_FRONTEND=noninteractive vm_as_root apt-get install -y -q --no-install-recommends "${missing[@]}"
  }
  rc=0; install || rc=$?
  if [ "$rc" -ne 0 ]; then
    [ "$rc" -eq 126 ] && unavailable "packages ${missing[*]} are missing and apt-get needs root (or passwordless sudo)"
    # Stale package lists are the usual cause: refresh them once and try again.
    apt_update_once "apt-get install failed; retrying after it" ||
      unavailable "apt-get install ${missing[*]} failed"
    install || unavailable "apt-get install ${missing[*]} failed"
  fi
fi
# The tools the rest of this script and run-in-vm.sh rely on.
for t in qemu-system-x86_64 busybox cpio rdma; do
  command -v "$t" >/dev/null 2>&1 || vm_die "$t not found after installing the packages"
done

# --- 2. Kernel -------------------------------------------------------------------------------
if $check_only && [ ! -f "$VM_CURRENT_ENV" ]; then
  vm_log "not prepared: no $VM_CURRENT_ENV"; exit 1
fi
mkdir -p "$VM_CACHE"
# One prepare at a time per cache folder (CTest may run tests in parallel).
exec 9>"$VM_CACHE/.lock"
flock 9

# Whatever the previous run prepared (empty variables if nothing yet).
PKG='' PKGVER='' KVER='' KERNEL='' INITRD='' INITRD_STAMP=''
# shellcheck disable=SC1090
[ -f "$VM_CURRENT_ENV" ] && . "$VM_CURRENT_ENV"

resolved=$(vm_resolve_kernel_pkg) ||
  { ! $check_only && apt_update_once "no kernel package in the apt lists" && resolved=$(vm_resolve_kernel_pkg); } ||
  resolved=''
want_pkg=${resolved% *}; want_ver=${resolved#* }

if [ -z "$want_pkg" ]; then
  # apt knows no kernel package; an earlier download still serves.
  [ -n "$KVER" ] || unavailable "apt-cache knows no linux-image-amd64 (or ${OPENDAT_VM_KERNEL_PKG:-linux-image-6.12-amd64}) in the configured Debian sources"
  vm_log "no kernel package in the apt sources; keeping the cached $PKG $PKGVER"
  want_pkg=$PKG want_ver=$PKGVER
fi

kdir="$VM_CACHE/kernel/${want_pkg}_${want_ver}"
if [ ! -f "$kdir/.complete" ]; then
  $check_only && { vm_log "kernel $want_pkg $want_ver is not in the cache"; exit 1; }
  vm_log "downloading $want_pkg $want_ver (about 70-100 MB, once)"
  tmp=$(mktemp -d "$VM_CACHE/.dl.XXXXXX")
  chmod 755 "$tmp"   # so that apt's unprivileged _apt user may write there when we are root
  trap 'rm -rf "$tmp"' EXIT
  # apt-get download writes into the current folder, and works as any user.
  # As root, apt drops to its _apt user to download, which cannot write into a private
  # home (~/.cache under /root): it falls back and warns. Tell it to stay root.
  sandbox=()
  [ "$(id -u)" -ne 0 ] || sandbox=(-o APT::Sandbox::User=root)
  download() { (cd "$tmp" && apt-get download -q "${sandbox[@]}" "$want_pkg=$want_ver" >&2); }
  if ! download && ! { apt_update_once "the download failed; stale lists?" &&
                       resolved=$(vm_resolve_kernel_pkg) &&
                       want_pkg=${resolved% *} && want_ver=${resolved#* } &&
                       kdir="$VM_CACHE/kernel/${want_pkg}_${want_ver}" && download; }; then
    if [ -n "$KVER" ] && [ -f "$KERNEL" ] && [ -f "$INITRD" ]; then
      vm_log "download failed; keeping the cached $PKG $PKGVER"
      exit 0
    fi
    unavailable "apt-get download $want_pkg=$want_ver failed (no access to the Debian mirror?)"
  fi
  vm_log "unpacking (dpkg-deb -x, the package is never installed)"
  mkdir -p "$tmp/tree"
  dpkg-deb -x "$tmp"/*.deb "$tmp/tree"
  rm -f "$tmp"/*.deb
  mkdir -p "$(dirname "$kdir")"
  rm -rf "$kdir"
  mv "$tmp/tree" "$kdir"
  rm -rf "$tmp"; trap - EXIT
  touch "$kdir/.complete"
fi

# The kernel's release string is the name of its module folder.
kver=$(basename "$(find "$kdir/lib/modules" -mindepth 1 -maxdepth 1 -type d | head -n1)")
[ -n "$kver" ] || vm_die "no lib/modules/<version> in $kdir"
vmlinuz="$kdir/boot/vmlinuz-$kver"
[ -f "$vmlinuz" ] || vm_die "no $vmlinuz"
moddir="$kdir/lib/modules/$kver"

# Module index of the full kernel: busybox depmod (kmod's depmod need not be installed).
# It reads .ko.xz itself; modules.dep then names the compressed files.
if [ ! -s "$moddir/modules.dep" ]; then
  $check_only && { vm_log "module index of $kver missing"; exit 1; }
  vm_log "indexing the modules of $kver (busybox depmod)"
  busybox depmod -b "$kdir" "$kver"
fi

# --- 3. Initramfs ----------------------------------------------------------------------------
# Rebuilt when the module list, the /init below or busybox change; the stamp is their hash.
init_script() {
  # The initramfs /init only loads the modules and hands over to guest-init.sh, which comes
  # fresh from the control share at every boot: changing the harness needs no new initramfs.
  cat <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $(cat /etc/vm-modules); do modprobe "$m" 2>/dev/null || echo "init: modprobe $m failed"; done
mkdir -p /ctl
if mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 ctl /ctl && [ -f /ctl/guest-init.sh ]; then
  exec sh /ctl/guest-init.sh
fi
echo "init: no control share; powering off"
poweroff -f
EOF
}
# Bump VM_INITRAMFS_LAYOUT when the way the initramfs is assembled changes.
VM_INITRAMFS_LAYOUT=2
stamp=$( { echo "layout $VM_INITRAMFS_LAYOUT"; printf '%s\n' "${VM_MODULES[@]}"; init_script; sha256sum "$(command -v busybox)"; echo "$kver"; } |
         sha256sum | cut -c1-16)
initrd="$VM_CACHE/initramfs/$kver.cpio.gz"

if [ ! -f "$initrd" ] || [ "$INITRD_STAMP" != "$stamp" ] || [ "$KVER" != "$kver" ]; then
  $check_only && { vm_log "initramfs for $kver missing or out of date"; exit 1; }
  vm_log "building the initramfs for $kver"
  stage=$(mktemp -d "$VM_CACHE/.initramfs.XXXXXX")
  trap 'rm -rf "$stage"' EXIT
  mkdir -p "$stage"/{bin,dev,proc,sys,etc,ctl,lib/modules/"$kver"}
  cp "$(command -v busybox)" "$stage/bin/busybox"
  init_script >"$stage/init"
  chmod 755 "$stage/init"

  # Dependency closure through modules.dep. Its lines read "path/mod.ko.xz: dep1.ko.xz dep2...".
  declare -A want=()
  modpath() {  # module name (either '-' or '_') -> its path in modules.dep, or nothing
    local n=${1//-/_}
    awk -F: -v n="$n" '{ f=$1; sub(/.*\//, "", f); sub(/\.ko(\.(xz|zst|gz))?$/, "", f);
                        gsub(/-/, "_", f); if (f == n) { print $1; exit } }' "$moddir/modules.dep"
  }
  add_closure() {
    local p=$1 d
    [ -n "${want[$p]:-}" ] && return 0
    want[$p]=1
    # shellcheck disable=SC2013  # modules.dep: one line per module, its deps as words
    for d in $(awk -F: -v p="$p" '$1 == p { print $2; exit }' "$moddir/modules.dep"); do
      add_closure "$d"
    done
  }
  loadlist=()
  for m in "${VM_MODULES[@]}"; do
    p=$(modpath "$m")
    if [ -z "$p" ]; then
      # Built in, or absent from this kernel (e.g. crc32 variants differ between versions).
      continue
    fi
    add_closure "$p"
    case " ${loadlist[*]} " in *" ${m//-/_} "*) ;; *) loadlist+=("${m//-/_}") ;; esac
  done
  for p in "${!want[@]}"; do
    mkdir -p "$stage/lib/modules/$kver/$(dirname "$p")"
    case "$p" in
      *.ko.xz)  xz -dc   "$moddir/$p" >"$stage/lib/modules/$kver/${p%.xz}" ;;
      *.ko.zst) zstd -qdc "$moddir/$p" >"$stage/lib/modules/$kver/${p%.zst}" ;;
      *.ko.gz)  gzip -dc "$moddir/$p" >"$stage/lib/modules/$kver/${p%.gz}" ;;
      *)        cp "$moddir/$p" "$stage/lib/modules/$kver/$p" ;;
    esac
  done
  for f in modules.builtin modules.builtin.modinfo modules.order; do
    [ -f "$moddir/$f" ] && cp "$moddir/$f" "$stage/lib/modules/$kver/"
  done
  # A fresh index over the decompressed modules, for busybox modprobe in the guest.
  busybox depmod -b "$stage" "$kver"
  printf '%s\n' "${loadlist[@]}" >"$stage/etc/vm-modules"
  vm_log "initramfs: ${#want[@]} modules; load list: ${loadlist[*]}"

  mkdir -p "$VM_CACHE/initramfs"
  (cd "$stage" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --quiet) |
    gzip -9 >"$initrd.tmp"
  mv "$initrd.tmp" "$initrd"
  rm -rf "$stage"; trap - EXIT
fi

if $check_only; then
  vm_log "prepared: kernel $kver ($want_pkg $want_ver), cache $VM_CACHE"
  exit 0
fi

cat >"$VM_CURRENT_ENV.tmp" <<EOF
PKG=$want_pkg
PKGVER=$want_ver
KVER=$kver
KERNEL=$vmlinuz
INITRD=$initrd
INITRD_STAMP=$stamp
EOF
mv "$VM_CURRENT_ENV.tmp" "$VM_CURRENT_ENV"

# Older kernels and initramfs images are of no more use (about 120 MB each).
for old in "$VM_CACHE"/kernel/*/ "$VM_CACHE"/initramfs/*.cpio.gz; do
  [ -e "$old" ] || continue
  case "${old%/}" in "$kdir"|"$initrd") continue ;; esac
  vm_log "removing the outdated $old"
  rm -rf "$old"
done
vm_log "ready: kernel $kver ($want_pkg $want_ver), initramfs $(du -h "$initrd" | cut -f1), cache $VM_CACHE"
