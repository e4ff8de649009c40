#!/bin/busybox sh
# shellcheck shell=dash
# Second stage of the guest's init (busybox sh, inside the VM). The initramfs /init has loaded
# the kernel modules and mounted the control share at /ctl; run-in-vm.sh copies this file there
# at every boot, so changes here need no new initramfs.
#
# It builds the root file system (the host's / over 9p, read-only, under an overlay with a tmpfs
# upper layer), mounts the read-write shares at their host paths, creates dummy0 and the
# soft-RoCE device rxe0 on it, runs the command from /ctl/cmd.sh in a chroot with its output in
# /ctl/stdout and /ctl/stderr, writes its exit status to /ctl/status and powers off.
#
# /ctl/vm.conf (written by run-in-vm.sh) sets: VM_SHARES (space-separated host paths, shared
# with tags rw0, rw1, ...), VM_ADDR (address/prefix of dummy0), VM_MTU.
set -u
export PATH=/bin
# shellcheck disable=SC1091  # written by run-in-vm.sh
. /ctl/vm.conf

up() { cut -d' ' -f1 /proc/uptime; }
log() { echo "guest[$(up)s]: $*"; }
# Give up: report a status the host recognises as a harness failure, and power off.
fail() {
  log "FATAL: $*"
  echo "opendat-vm guest setup failed: $*" >>/ctl/stderr
  echo 125 >/ctl/status
  sync; poweroff -f
  sleep 60
}

log "modules loaded, kernel $(uname -r)"
# A test of the host's boot watchdog (OPENDAT_VM_HANG_BOOTS): never start the command.
if [ -f /ctl/hang ]; then
  log "hanging on purpose (OPENDAT_VM_HANG_BOOTS)"
  while :; do sleep 60; done
fi
R=/newroot
mkdir -p /lower /rw $R
opts=trans=virtio,version=9p2000.L,msize=262144
mount -t 9p -o "$opts,ro" root /lower || fail "cannot mount the host root (9p tag root)"
mount -t tmpfs -o mode=755 tmpfs /rw || fail "tmpfs"
mkdir -p /rw/upper /rw/work
mount -t overlay overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work $R ||
  fail "cannot mount the overlay root"

# Fresh kernel file systems and scratch space; nothing of the host's /tmp, /run or /dev.
mount -t proc proc $R/proc || fail "proc"
mount -t sysfs sys $R/sys || fail "sysfs"
mount -t devtmpfs dev $R/dev || fail "devtmpfs"
mkdir -p $R/dev/pts $R/dev/shm
mount -t devpts -o ptmxmode=666 devpts $R/dev/pts
mount -t tmpfs -o mode=1777 tmpfs $R/dev/shm
mount -t tmpfs -o mode=1777 tmpfs $R/tmp
mount -t tmpfs -o mode=755 tmpfs $R/run
mkdir -p $R/run/lock $R/run/opendat-vm
mount -o bind /ctl $R/run/opendat-vm || fail "bind /ctl"

# Read-write shares, at the same paths as on the host (after /tmp and /run, so that a share
# below them lands on top of the fresh tmpfs).
i=0
for p in $VM_SHARES; do
  mkdir -p "$R$p" 2>/dev/null
  mount -t 9p -o "$opts" "rw$i" "$R$p" || fail "cannot mount share rw$i at $p"
  log "shared read-write: $p"
  i=$((i + 1))
done

# Network and the soft-RoCE device. The address exists only inside this VM: dummy0 is not
# connected to anything, and the VM has no network card.
hostname opendat-vm
chroot $R ip link set lo up || fail "lo"
# The dummy module creates dummy0 itself (numdummies=1); add it only if it is not there.
chroot $R ip link show dummy0 >/dev/null 2>&1 || chroot $R ip link add dummy0 type dummy ||
  fail "ip link add dummy0"
chroot $R ip link set dummy0 mtu "$VM_MTU" || fail "mtu $VM_MTU"
chroot $R ip addr add "$VM_ADDR" dev dummy0 || fail "address $VM_ADDR"
chroot $R ip link set dummy0 up || fail "dummy0 up"
chroot $R rdma link add rxe0 type rxe netdev dummy0 || fail "rdma link add rxe0"
n=0
until grep -q ACTIVE /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null; do
  n=$((n + 1))
  [ $n -le 300 ] || fail "rxe0 port 1 not ACTIVE after 30 s: $(cat /sys/class/infiniband/rxe0/ports/1/state 2>&1)"
  sleep 0.1
done
log "rxe0 on dummy0 ($VM_ADDR, mtu $VM_MTU): $(cat /sys/class/infiniband/rxe0/ports/1/state)"
up >/ctl/boot-seconds

# The command, as prepared by the host (environment, working folder, ulimit -l).
log "running the command"
chroot $R /bin/bash /run/opendat-vm/cmd.sh </dev/null >>/ctl/stdout 2>>/ctl/stderr
rc=$?
log "command exited with status $rc"
up >/ctl/end-seconds
echo $rc >/ctl/status.tmp && mv /ctl/status.tmp /ctl/status
sync
poweroff -f
