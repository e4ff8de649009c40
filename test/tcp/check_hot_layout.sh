#!/usr/bin/env bash
# The hot path's functions sit together (docs/benchmarks.md, "The hot path's code on a few
# pages"): every function below is marked [[gnu::hot]], which an optimised GCC build places
# in .text.hot, one block. Fails when one of them is missing or the block they span grows
# past its bound: an attribute dropped, a function moved out of the block.
#
#   check_hot_layout.sh LIBOPENDAT_TCP LIBDAT2
set -euo pipefail
tcp=$1 dat2=$2
command -v nm >/dev/null || { echo "nm not installed (binutils)"; exit 1; }

# span LIB MAX_BYTES NAME...: the listed functions' addresses must lie within MAX_BYTES.
span() {
    local lib=$1 max=$2
    shift 2
    local syms lo= hi= name addr size start end
    syms=$(nm -C --defined-only -S "$lib")
    for name in "$@"; do
        # A clone (".part.0", ".cold") is another symbol: take the function's own.
        read -r addr size < <(awk -v n="$name" '
            { line = $0; sub(/^[0-9a-f]+ [0-9a-f]+ [tTwW] /, "", line) }
            index(line, n) == 1 && line !~ /\[clone/ { print $1, $2; exit }' <<<"$syms") || true
        if [[ -z ${addr:-} ]]; then
            echo "FAIL: $(basename "$lib"): no function $name"
            return 1
        fi
        start=$((16#$addr))
        end=$((start + 16#$size))
        if [[ -z $lo ]] || ((start < lo)); then lo=$start; fi
        if [[ -z $hi ]] || ((end > hi)); then hi=$end; fi
        addr=
    done
    printf '%s: %d functions in %d bytes (bound %d)\n' "$(basename "$lib")" $# $((hi - lo)) "$max"
    if ((hi - lo > max)); then
        echo "FAIL: the hot functions of $(basename "$lib") are spread over more than $max bytes"
        return 1
    fi
}

status=0
span "$tcp" 32768 \
    'opendat::util::entry::evd_dequeue(' \
    'opendat::util::entry::ep_post_send(' \
    'opendat::util::entry::ep_post_recv(' \
    'opendat::util::entry::ep_post_rdma_write(' \
    'opendat::util::entry::ep_post_rdma_read(' \
    'opendat::util::Evd::ring_dequeue(' \
    'opendat::util::Evd::post(' \
    'opendat::util::post_dto(' \
    'opendat::tcp::TcpTransport::progress_inline(' \
    'opendat::tcp::Engine::poll_inline(' \
    'opendat::tcp::Engine::spin(' \
    'opendat::tcp::TcpEp::poll_hot(' \
    'opendat::tcp::TcpEp::rx_progress(' \
    'opendat::tcp::TcpEp::rx_dispatch(' \
    'opendat::tcp::TcpEp::rx_payload_done(' \
    'opendat::tcp::TcpEp::tx_progress(' \
    'opendat::tcp::TcpEp::post_request(' \
    'opendat::tcp::TcpEp::post_recv(' \
    'opendat::tcp::TcpEp::reap(' \
    'opendat::tcp::TcpEp::update_poll(' \
    'opendat::tcp::BufferedSocket::refill(' \
    'opendat::tcp::send_frames(' || status=1
span "$dat2" 4096 dat_evd_dequeue dat_evd_wait dat_ep_post_send dat_ep_post_recv \
    dat_ep_post_rdma_read dat_ep_post_rdma_write || status=1
exit $status
