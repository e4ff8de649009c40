#include "attributes.hpp"

#include <dat2/dat_trace.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdio>
#include <cstring>

namespace datinfo {
namespace {

// Fixed-size name fields need not be NUL-terminated by a careless provider.
std::string bounded(const char *s, std::size_t size) {
    return std::string(s, strnlen(s, size));
}

std::string hex(unsigned long long v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%llx", v);
    return buf;
}

Node address_node(const DAT_IA_ADDRESS_PTR addr) {
    if (addr == nullptr) return Node();
    char buf[INET6_ADDRSTRLEN] = {};
    if (addr->sa_family == AF_INET) {
        const auto *in = reinterpret_cast<const sockaddr_in *>(addr);
        if (inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf)) return Node(buf);
    } else if (addr->sa_family == AF_INET6) {
        const auto *in6 = reinterpret_cast<const sockaddr_in6 *>(addr);
        if (inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof buf)) return Node(buf);
    }
    return Node("address family " + std::to_string(addr->sa_family));
}

const char *extension_name(DAT_EXTENSION e) {
    switch (e) {
        case DAT_EXTENSION_NONE:
            return "none";
        case DAT_EXTENSION_IB:
            return "ib";
        case DAT_EXTENSION_IW:
            return "iw";
    }
    return "unknown";
}

bool is_function_attr(const char *name) {
    return name != nullptr && (std::strcmp(name, DAT_VENDOR_ATTR_DEBUG_QUERY) == 0 ||
                               std::strcmp(name, DAT_VENDOR_ATTR_DEBUG_MODIFY) == 0);
}

}  // namespace

Node named_attrs_node(const DAT_NAMED_ATTR *attrs, DAT_COUNT count) {
    Node n = Node::map();
    if (attrs == nullptr || count <= 0) return n;
    if (count > kMaxNamedAttrs) count = kMaxNamedAttrs;
    for (DAT_COUNT i = 0; i < count; ++i) {
        const DAT_NAMED_ATTR &a = attrs[i];
        const std::string name = a.name ? a.name : "(null)";
        // Never read a function pointer as a string.
        if (is_function_attr(a.name))
            n.set(name, "(function)");
        else
            n.set(name, a.value ? Node(a.value) : Node());
    }
    return n;
}

Node ia_attr_node(const DAT_IA_ATTR &a, bool verbose) {
    Node n = Node::map();
    n.set("adapter_name", bounded(a.adapter_name, sizeof a.adapter_name));
    n.set("vendor_name", bounded(a.vendor_name, sizeof a.vendor_name));
    n.set("hardware_version", std::to_string(a.hardware_version_major) + "." +
                                  std::to_string(a.hardware_version_minor));
    n.set("firmware_version", std::to_string(a.firmware_version_major) + "." +
                                  std::to_string(a.firmware_version_minor));
    n.set("ia_address", address_node(a.ia_address_ptr));
    n.set("max_eps", a.max_eps);
    n.set("max_evds", a.max_evds);
    n.set("max_evd_qlen", a.max_evd_qlen);
    n.set("max_lmrs", a.max_lmrs);
    n.set("max_message_size", a.max_message_size);
    n.set("max_rdma_size", a.max_rdma_size);
    n.set("extension_supported", extension_name(a.extension_supported));
    n.set("extension_version", a.extension_version);
    if (verbose) {
        n.set("max_dto_per_ep", a.max_dto_per_ep);
        n.set("max_rdma_read_per_ep_in", a.max_rdma_read_per_ep_in);
        n.set("max_rdma_read_per_ep_out", a.max_rdma_read_per_ep_out);
        n.set("max_iov_segments_per_dto", a.max_iov_segments_per_dto);
        n.set("max_lmr_block_size", a.max_lmr_block_size);
        n.set("max_lmr_virtual_address", hex(a.max_lmr_virtual_address));
        n.set("max_pzs", a.max_pzs);
        n.set("max_rmrs", a.max_rmrs);
        n.set("max_rmr_target_address", hex(a.max_rmr_target_address));
        n.set("max_srqs", a.max_srqs);
        n.set("max_ep_per_srq", a.max_ep_per_srq);
        n.set("max_recv_per_srq", a.max_recv_per_srq);
        n.set("max_iov_segments_per_rdma_read", a.max_iov_segments_per_rdma_read);
        n.set("max_iov_segments_per_rdma_write", a.max_iov_segments_per_rdma_write);
        n.set("max_rdma_read_in", a.max_rdma_read_in);
        n.set("max_rdma_read_out", a.max_rdma_read_out);
        n.set("max_rdma_read_per_ep_in_guaranteed",
              a.max_rdma_read_per_ep_in_guaranteed != DAT_FALSE);
        n.set("max_rdma_read_per_ep_out_guaranteed",
              a.max_rdma_read_per_ep_out_guaranteed != DAT_FALSE);
        n.set("zb_supported", a.zb_supported != DAT_FALSE);
        n.set("transport_attributes", named_attrs_node(a.transport_attr, a.num_transport_attr));
    }
    n.set("vendor_attributes", named_attrs_node(a.vendor_attr, a.num_vendor_attr));
    return n;
}

Node provider_attr_node(const DAT_PROVIDER_ATTR &a, bool verbose) {
    Node n = Node::map();
    n.set("provider_name", bounded(a.provider_name, sizeof a.provider_name));
    n.set("provider_version", std::to_string(a.provider_version_major) + "." +
                                  std::to_string(a.provider_version_minor));
    n.set("dapl_version",
          std::to_string(a.dapl_version_major) + "." + std::to_string(a.dapl_version_minor));
    n.set("is_thread_safe", a.is_thread_safe != DAT_FALSE);
    n.set("max_private_data_size", a.max_private_data_size);
    n.set("optimal_buffer_alignment", a.optimal_buffer_alignment);
    n.set("srq_supported", a.srq_supported != DAT_FALSE);
    if (verbose) {
        n.set("lmr_mem_types_supported", static_cast<int>(a.lmr_mem_types_supported));
        n.set("iov_ownership_on_return", static_cast<int>(a.iov_ownership_on_return));
        n.set("dat_qos_supported", static_cast<int>(a.dat_qos_supported));
        n.set("completion_flags_supported",
              hex(static_cast<unsigned>(a.completion_flags_supported)));
        n.set("supports_multipath", a.supports_multipath != DAT_FALSE);
        n.set("ep_creator", static_cast<int>(a.ep_creator));
        n.set("pz_support", static_cast<int>(a.pz_support));
        Node matrix = Node::list();
        for (const auto &row : a.evd_stream_merging_supported) {
            Node r = Node::list();
            for (DAT_BOOLEAN b : row) r.push(b != DAT_FALSE);
            matrix.push(std::move(r));
        }
        n.set("evd_stream_merging_supported", std::move(matrix));
        n.set("srq_watermarks_supported", a.srq_watermarks_supported);
        n.set("srq_ep_pz_difference_supported", a.srq_ep_pz_difference_supported != DAT_FALSE);
        n.set("srq_info_supported", a.srq_info_supported);
        n.set("ep_recv_info_supported", a.ep_recv_info_supported);
        n.set("lmr_sync_req", a.lmr_sync_req != DAT_FALSE);
        n.set("dto_async_return_guaranteed", a.dto_async_return_guaranteed != DAT_FALSE);
        n.set("rdma_write_for_rdma_read_req", a.rdma_write_for_rdma_read_req != DAT_FALSE);
        n.set("rdma_read_lmr_rmr_context_exposure",
              a.rdma_read_lmr_rmr_context_exposure != DAT_FALSE);
        n.set("rmr_scope_supported", static_cast<int>(a.rmr_scope_supported));
        n.set("is_signal_safe", a.is_signal_safe != DAT_FALSE);
        n.set("ha_supported", a.ha_supported != DAT_FALSE);
        n.set("ha_loadbalancing", static_cast<int>(a.ha_loadbalancing));
    }
    n.set("provider_specific_attributes",
          named_attrs_node(a.provider_specific_attr, a.num_provider_specific_attr));
    return n;
}

}  // namespace datinfo
