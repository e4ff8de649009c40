#!/bin/bash
# Runs dtest server and client in two network namespaces joined by a veth link, each
# with its own IA bound to its end of the link (not loopback).
#
#   run_netns_pair.sh <provider.so> <libdir|-> [dtest arguments...]
#
# Needs root and iproute2; exit 77 (skipped) otherwise. KEEP=1 keeps the work directory.
# OPENDAT_SYS_PRELOAD: sanitizer runtime preloaded into dtest (sanitizer builds).
set -u
lib=$1 libdir=$2
shift 2
if [[ $(id -u) -ne 0 ]] || ! command -v ip >/dev/null || [[ ! -x /usr/bin/dtest ]]; then
    echo "SKIP: needs root, iproute2 and /usr/bin/dtest"
    exit 77
fi
tag=odt$$
nsa=${tag}a nsb=${tag}b
work=$(mktemp -d)
cleanup() {
    ip netns pids "$nsa" 2>/dev/null | xargs -r kill 2>/dev/null
    ip netns pids "$nsb" 2>/dev/null | xargs -r kill 2>/dev/null
    ip netns del "$nsa" 2>/dev/null
    ip netns del "$nsb" 2>/dev/null
    [[ -n ${KEEP:-} ]] || rm -rf "$work"
}
trap cleanup EXIT
ip netns add "$nsa" && ip netns add "$nsb" || { echo "SKIP: cannot create network namespaces"; exit 77; }
ip link add "${tag}x" type veth peer name "${tag}y" || { echo "SKIP: cannot create a veth pair"; exit 77; }
ip link set "${tag}x" netns "$nsa"
ip link set "${tag}y" netns "$nsb"
ip -n "$nsa" addr add 10.233.7.1/24 dev "${tag}x"
ip -n "$nsb" addr add 10.233.7.2/24 dev "${tag}y"
for ns in "$nsa" "$nsb"; do
    ip -n "$ns" link set lo up
done
ip -n "$nsa" link set "${tag}x" up
ip -n "$nsb" link set "${tag}y" up

# One IA name (the dtest client takes the provider name from the server), configured per
# side: the server's IA names its veth device, the client's its address.
echo "tcp-veth u2.0 nonthreadsafe default $lib opendat.2.0 \"${tag}x 0\" \"\"" >"$work/server.conf"
echo "tcp-veth u2.0 nonthreadsafe default $lib opendat.2.0 \"10.233.7.2 0\" \"\"" >"$work/client.conf"
if [[ $libdir != - ]]; then
    export LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi

DAT_OVERRIDE=$work/server.conf ip netns exec "$nsa" timeout 120 env ${OPENDAT_SYS_PRELOAD:+LD_PRELOAD=$OPENDAT_SYS_PRELOAD} dtest -P tcp-veth "$@" >"$work/server.out" 2>&1 &
srv=$!
for _ in $(seq 200); do
    ip netns exec "$nsa" grep -qiE '^ *[0-9]+: [0-9A-F]+:3DD4 [0-9A-F]+:0000 0A' /proc/net/tcp && break
    sleep 0.05
done
DAT_OVERRIDE=$work/client.conf ip netns exec "$nsb" timeout 120 env ${OPENDAT_SYS_PRELOAD:+LD_PRELOAD=$OPENDAT_SYS_PRELOAD} dtest -P tcp-veth -h 10.233.7.1 "$@" >"$work/client.out" 2>&1
cli_rc=$?
wait $srv
srv_rc=$?
echo "=== server rc=$srv_rc"; cat "$work/server.out"
echo "=== client rc=$cli_rc"; cat "$work/client.out"
fail=0
[[ $srv_rc -eq 0 && $cli_rc -eq 0 ]] || fail=1
for side in server client; do
    grep -qF 'DAPL Test Complete. PASSED' "$work/$side.out" || fail=1
done
grep -q '10.233.7.1' "$work/server.out" || { echo "FAIL: server IA not on the veth address"; fail=1; }
exit $fail
