#!/bin/bash
# The unmodified Debian dtestx in its single-process modes over the tcp provider.
#
#   run_dtestx_single.sh query|ud <ia_name> <dat.conf> <libdir|->
#
# query: `dtestx -q` (dat_ib_open_query / dat_ib_close_query) must succeed and list the
#        IB extension attributes.
# ud:    `dtestx -u` (unreliable datagrams, not implemented) must fail cleanly: a DAT error
#        message and exit code 1, no signal, no hang.
# <libdir> "-" uses the system libdat2 (the reference); otherwise ours. Exit 77 = skipped.
set -u
mode=$1 ia=$2 conf=$3 libdir=$4
bin=/usr/bin/dtestx
[[ -x $bin ]] || { echo "SKIP: $bin is not installed (package dapl2-utils)"; exit 77; }
export DAT_OVERRIDE=$conf
[[ $libdir == - ]] || export LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# dtestx binds its side channel port (15828) even here: take turns with the pair tests.
exec 9>/tmp/opendat-fixed-ports.lock
flock -w 600 9 || echo "warning: could not lock /tmp/opendat-fixed-ports.lock"
run() { timeout 60 env ${OPENDAT_SYS_PRELOAD:+LD_PRELOAD=$OPENDAT_SYS_PRELOAD} "$bin" -P "$ia" "$@" 2>&1; }
fail=0
case $mode in
query)
    out=$(run -q); rc=$?
    echo "$out"
    [[ $rc -eq 0 ]] || { echo "FAIL: dtestx -q exit code $rc"; fail=1; }
    for attr in DAT_EXTENSION_INTERFACE=TRUE DAT_IB_IMMED_DATA=TRUE DAT_IB_FETCH_AND_ADD=TRUE \
                DAT_IB_CMP_AND_SWAP=TRUE; do
        grep -qF "$attr" <<<"$out" || { echo "FAIL: attribute $attr not listed"; fail=1; }
    done
    ;;
ud)
    out=$(run -u); rc=$?
    echo "$out"
    [[ $rc -eq 1 ]] || { echo "FAIL: dtestx -u exit code $rc (expected 1: a clean failure)"; fail=1; }
    grep -q 'returned DAT_' <<<"$out" || { echo "FAIL: no DAT error message"; fail=1; }
    ;;
*)
    echo "unknown mode $mode"; exit 2 ;;
esac
exit $fail
