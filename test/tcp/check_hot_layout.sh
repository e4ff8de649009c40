#!/usr/bin/env bash
# The hot path's functions sit together (docs/benchmarks.md, "The hot path's code on a few
# pages"). Two checks, per library:
#  1. attribute: each function listed below is compiled into a .text.hot section (it is
#     still marked [[gnu::hot]]), read from the object files;
#  2. grouping: in the linked library, nothing between the lowest and the highest of them
#     is a function the compiler did not put in .text.hot (the linker kept the hot block
#     whole; GNU ld does, lld and mold only when asked to keep section prefixes).
#
#   check_hot_layout.sh LIBOPENDAT_TCP LIBDAT2 OBJECT...   (objects of both libraries; an
#                                                         argument may be a ;-list)
set -euo pipefail
tcp=$1 dat2=$2
shift 2
objects=()
for a in "$@"; do
    IFS=';' read -r -a parts <<<"$a"
    objects+=("${parts[@]}")
done
for tool in nm objdump; do
    command -v "$tool" >/dev/null || { echo "$tool not installed (binutils)"; exit 1; }
done

# "section<TAB>demangled name" for every function symbol of the objects.
sections=$(for o in "${objects[@]}"; do objdump -t -C "$o"; done | awk '
    { for (i = 1; i < NF; i++) if ($i == "F") {
          sec = $(i + 1); j = i + 3
          if ($j == ".hidden" || $j == ".protected" || $j == ".internal") j++
          name = $j; for (k = j + 1; k <= NF; k++) name = name " " $k
          print sec "\t" name; break } }')
hot_names=$(awk -F'\t' '$1 ~ /^\.text\.hot/ { print $2 }' <<<"$sections" | sort -u)

# awk condition: the record ($0) is the function NAME: a C name exactly, a C++ name (listed
# up to its "(") by its start, not a clone.
match='($0 == n || (substr(n, length(n)) == "(" && index($0, n) == 1 && !/\[clone/))'

status=0
# check LIB NAME...: NAME is the start of a demangled function name, up to its "(".
check() {
    local lib=$1
    shift
    local syms lo= hi= name line start size end n=0 bad=0
    # "address<TAB>size<TAB>demangled name" of every function, in decimal.
    syms=$(nm -C --defined-only -S -t d "$lib" | awk '$3 ~ /^[tTwW]$/ {
        name = $4; for (k = 5; k <= NF; k++) name = name " " $k
        print $1 + 0 "\t" $2 + 0 "\t" name }')
    for name in "$@"; do
        if ! awk -v n="$name" "$match"' { f = 1 } END { exit !f }' <<<"$hot_names"; then
            if awk -F'\t' -v n="$name" '{ $0 = $2 }'"$match"' { f = 1 } END { exit !f }' \
                <<<"$sections"; then
                echo "FAIL: $name is not in .text.hot: its [[gnu::hot]] is gone"
            else
                echo "FAIL: no function $name in the objects"
            fi
            bad=1
            continue
        fi
        line=$(awk -F'\t' -v n="$name" '{ a = $1; b = $2; $0 = $3 }'"$match"' { print a, b; exit }' \
            <<<"$syms")
        if [[ -z $line ]]; then
            echo "FAIL: $(basename "$lib"): no function $name"
            bad=1
            continue
        fi
        read -r start size <<<"$line"
        end=$((start + size))
        if [[ -z $lo ]] || ((start < lo)); then lo=$start; fi
        if [[ -z $hi ]] || ((end > hi)); then hi=$end; fi
        n=$((n + 1))
    done
    ((bad == 0)) || return 1
    # Every function placed between them must be a hot one too.
    local intruders
    intruders=$(awk -F'\t' -v lo="$lo" -v hi="$hi" '$1 >= lo && $1 < hi { print $3 }' <<<"$syms" |
        sort -u | comm -23 - <(printf '%s\n' "$hot_names"))
    printf '%s: %d listed functions in %d bytes\n' "$(basename "$lib")" "$n" $((hi - lo))
    if [[ -n $intruders ]]; then
        echo "FAIL: not hot, yet placed among the hot functions of $(basename "$lib"):"
        sed 's/^/  /' <<<"$intruders"
        return 1
    fi
}

check "$tcp" \
    'opendat::util::entry::evd_dequeue(' \
    'opendat::util::entry::evd_wait(' \
    'opendat::util::entry::ep_post_send(' \
    'opendat::util::entry::ep_post_recv(' \
    'opendat::util::entry::ep_post_rdma_write(' \
    'opendat::util::entry::ep_post_rdma_read(' \
    'opendat::util::Evd::ring_dequeue(' \
    'opendat::util::Evd::ring_wait(' \
    'opendat::util::Evd::post(' \
    'opendat::util::post_dto(' \
    'opendat::util::MemTable::check_iov(' \
    'opendat::tcp::TcpTransport::progress_inline(' \
    'unsigned int opendat::tcp::(anonymous namespace)::hot_post<&opendat::util::send_checks, &opendat::tcp::(anonymous namespace)::post_send>(' \
    'unsigned int opendat::tcp::(anonymous namespace)::hot_post<&opendat::util::recv_checks, &opendat::tcp::(anonymous namespace)::post_recv>(' \
    'opendat::tcp::Engine::poll_inline(' \
    'opendat::tcp::Engine::wait_inline(' \
    'opendat::tcp::Engine::spin(' \
    'opendat::tcp::TcpEp::poll_hot(' \
    'opendat::tcp::TcpEp::rx_progress(' \
    'opendat::tcp::TcpEp::rx_continue(' \
    'opendat::tcp::TcpEp::rx_fast_send(' \
    'opendat::tcp::TcpEp::rx_header(' \
    'opendat::tcp::TcpEp::rx_dispatch(' \
    'opendat::tcp::TcpEp::on_send_frame(' \
    'opendat::tcp::TcpEp::rx_payload_done(' \
    'opendat::tcp::TcpEp::tx_progress(' \
    'opendat::tcp::TcpEp::post_request(' \
    'opendat::tcp::TcpEp::send_alone(' \
    'opendat::tcp::TcpEp::send_now(' \
    'opendat::tcp::TcpEp::post_recv(' \
    'opendat::tcp::TcpEp::reap(' \
    'opendat::tcp::TcpEp::update_poll_full(' \
    'opendat::tcp::BufferedSocket::refill(' \
    'opendat::tcp::BufferedSocket::assemble(' \
    'opendat::tcp::send_frames(' || status=1
check "$dat2" 'dat_evd_dequeue' 'dat_evd_wait' 'dat_ep_post_send' 'dat_ep_post_recv' \
    'dat_ep_post_rdma_read' 'dat_ep_post_rdma_write' || status=1
exit $status
