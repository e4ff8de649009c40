#!/usr/bin/env bash
# Runs the verbs provider's RDMA suite (rdma-suite.sh) on this host's own RDMA device, for
# a machine that has one (scripts/test.sh calls this instead of booting the soft-RoCE VM).
#
#   test/verbs/run-native.sh <build dir> [<output dir>]
#
# Picks the device OPENDAT_VERBS_NATIVE_DEVICE names (<device>[/<port>]), else the first one with an ACTIVE port whose network device has
# an IPv4 address (RoCE: the Ethernet netdev; InfiniBand: the IPoIB netdev): rdma_cm
# resolves IA addresses through IP. Server and client of every step run here, on that one
# device. Results: <output dir>, default <build>/test/verbs/native/results. The soft-RoCE
# VM runs the suite through this script too (vm_verbs): its rxe0 is such a device. Exit status: the suite's; 77 when no
# usable device was found (the reason is printed; 1 with OPENDAT_VERBS_NATIVE_REQUIRED=1).
set -euo pipefail
build=$(cd "$1" && pwd)
out=${2:-$build/test/verbs/native/results}
want=${OPENDAT_VERBS_NATIVE_DEVICE:-}

# netdev of <device> <port>: what `rdma link` says, else the RoCE GID table's netdev.
netdev_of() {
  local nd=""
  if command -v rdma >/dev/null 2>&1; then
    nd=$(rdma link show "$1/$2" 2>/dev/null | sed -n 's/.* netdev \([^ ]*\).*/\1/p' | head -1)
  fi
  [ -n "$nd" ] || nd=$(cat "/sys/class/infiniband/$1/ports/$2/gid_attrs/ndevs/0" 2>/dev/null || true)
  printf '%s' "$nd"
}
ipv4_of() {
  ip -4 -o addr show dev "$1" 2>/dev/null | awk '{ sub(/\/.*/, "", $4); print $4; exit }'
}

tried=()
for d in /sys/class/infiniband/*; do
  [ -e "$d" ] || continue
  dev=${d##*/}
  [ -z "$want" ] || [ "${want%%/*}" = "$dev" ] || continue
  for p in "$d"/ports/*; do
    port=${p##*/}
    case "$want" in */*) [ "${want#*/}" = "$port" ] || continue ;; esac
    if ! grep -qs ACTIVE "$p/state"; then tried+=("$dev/$port: port not ACTIVE"); continue; fi
    nd=$(netdev_of "$dev" "$port")
    if [ -z "$nd" ]; then tried+=("$dev/$port: no network device found for it"); continue; fi
    addr=$(ipv4_of "$nd")
    if [ -z "$addr" ]; then tried+=("$dev/$port: $nd has no IPv4 address"); continue; fi
    echo "run-native: RDMA suite on $dev port $port ($nd, $addr)"
    export OPENDAT_VERBS_DEVICE=$dev OPENDAT_VERBS_PORT=$port OPENDAT_VERBS_NETDEV=$nd \
      OPENDAT_VERBS_ADDR=$addr OPENDAT_VERBS_WHERE="${OPENDAT_VERBS_WHERE:-this host}"
    ourlib=-
    [ -e "$build/lib/libdat2.so.2" ] && ourlib=$build/lib
    exec bash "$(dirname "$0")/rdma-suite.sh" "$build/test/verbs" "$ourlib" "$out"
  done
done
echo "run-native: no usable RDMA device${want:+ matching $want} on this host:"
if [ ${#tried[@]} -eq 0 ]; then echo "  none in /sys/class/infiniband"; else printf '  %s\n' "${tried[@]}"; fi
# In the VM a missing device is a broken harness, not a reason to skip.
[ "${OPENDAT_VERBS_NATIVE_REQUIRED:-0}" = 1 ] && exit 1
exit 77
