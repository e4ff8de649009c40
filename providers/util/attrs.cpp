#include "util/attrs.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <cstring>

#include <dat2/dat_trace.h>

#include "trace/trace.hpp"
#include "util/extension.hpp"

namespace opendat::util {

namespace {

// The provider-level debug_query/debug_modify functions. DAPL is this provider's own
// trace domain; DAT is the hosting front end's, reached through its OpenDAT-only exports
// when it has them (the reference libdat2 does not).
template <class Fn>
Fn host_fn(const char *name) noexcept {
    void *sym = dlsym(RTLD_DEFAULT, name);
    Fn f = nullptr;
    std::memcpy(&f, &sym, sizeof f);
    return f;
}

DAT_RETURN trclvl_query(DAT_TRACE_COMPONENT component, DAT_UINT32 *level) noexcept {
    if (level == nullptr) return bad_arg(2);
    switch (component) {
        case DAT_TRACE_COMPONENT_DAPL:
            *level = static_cast<DAT_UINT32>(trace::dapl_domain().level());
            return DAT_SUCCESS;
        case DAT_TRACE_COMPONENT_DAT: {
            auto fn = host_fn<DAT_TRCLVL_QUERY_FUNC>("dat_trclvl_query");
            return fn != nullptr ? fn(component, level) : kNotImplemented;
        }
    }
    return bad_arg(1);
}

DAT_RETURN trclvl_modify(DAT_TRACE_COMPONENT component, DAT_UINT32 level) noexcept {
    if (level > DAT_TRACE_LEVEL_MAX) return bad_arg(2);
    switch (component) {
        case DAT_TRACE_COMPONENT_DAPL:
            trace::dapl_domain().set_level(static_cast<int>(level));
            return DAT_SUCCESS;
        case DAT_TRACE_COMPONENT_DAT: {
            auto fn = host_fn<DAT_TRCLVL_MODIFY_FUNC>("dat_trclvl_modify");
            return fn != nullptr ? fn(component, level) : kNotImplemented;
        }
    }
    return bad_arg(1);
}

const char *fn_as_value(DAT_TRCLVL_QUERY_FUNC f) noexcept {
    const char *v;
    std::memcpy(&v, &f, sizeof v);
    return v;
}
const char *fn_as_value(DAT_TRCLVL_MODIFY_FUNC f) noexcept {
    const char *v;
    std::memcpy(&v, &f, sizeof v);
    return v;
}

void copy_name(char *dst, const std::string &src) noexcept {
    std::size_t n = src.size() < DAT_NAME_MAX_LENGTH - 1 ? src.size() : DAT_NAME_MAX_LENGTH - 1;
    std::memcpy(dst, src.data(), n);
    dst[n] = '\0';
}

}  // namespace

void build_specific_attrs(Ia *ia) noexcept {
    const Limits &lim = ia->transport->limits();
    SpecificAttrs &a = ia->specific;
    std::snprintf(a.mtu, sizeof a.mtu, "%d", lim.transport_mtu);
    int n = 0;
    // dtest runs its RDMA-read phase only when this says "TRUE"; dtestsrq sizes its
    // buffers from the MTU.
    a.attrs[n++] = {"DAT_IB_RDMA_READ", "TRUE"};
    a.attrs[n++] = {"DAT_IB_TRANSPORT_MTU", a.mtu};
    a.attrs[n++] = {"DAT_IB_CONNECTIVITY_MODE", "DIRECT"};
    const bool ext = has_ib_extensions(lim);
    a.attrs[n++] = {"DAT_EXTENSION_INTERFACE", ext ? "TRUE" : "FALSE"};
    // The IB extension features, under the names <dat2/dat_ib_extensions.h> gives them.
    if (lim.atomics) {
        a.attrs[n++] = {DAT_IB_ATTR_FETCH_AND_ADD, "TRUE"};
        a.attrs[n++] = {DAT_IB_ATTR_CMP_AND_SWAP, "TRUE"};
    }
    if (lim.immediate_data) a.attrs[n++] = {DAT_IB_ATTR_IMMED_DATA, "TRUE"};
    a.attrs[n++] = {DAT_VENDOR_ATTR_DELAYED_ACK_SUPPORTED,
                    lim.delayed_ack_supported ? "true" : "false"};
    a.attrs[n++] = {DAT_VENDOR_ATTR_EXTENSION, "1.0"};
    a.attrs[n++] = {DAT_VENDOR_ATTR_EXT_VERSION, "1.0"};
    a.attrs[n++] = {DAT_VENDOR_ATTR_DEBUG_QUERY, fn_as_value(&trclvl_query)};
    a.attrs[n++] = {DAT_VENDOR_ATTR_DEBUG_MODIFY, fn_as_value(&trclvl_modify)};
    a.count = n;
}

void fill_ia_attr(Ia *ia, DAT_IA_ATTR *out) noexcept {
    const Limits &lim = ia->transport->limits();
    DAT_IA_ATTR a{};
    copy_name(a.adapter_name, ia->instance->name);
    copy_name(a.vendor_name, std::string("OpenDAT ") + lim.transport_name);
    a.hardware_version_major = 2;
    a.firmware_version_major = 2;
    a.ia_address_ptr = const_cast<sockaddr *>(ia->transport->address());
    a.max_eps = lim.max_eps;
    a.max_dto_per_ep = lim.max_dto_per_ep;
    a.max_rdma_read_per_ep_in = lim.max_rdma_read_per_ep;
    a.max_rdma_read_per_ep_out = lim.max_rdma_read_per_ep;
    a.max_evds = lim.max_evds;
    a.max_evd_qlen = lim.max_evd_qlen;
    a.max_iov_segments_per_dto = lim.max_iov;
    a.max_lmrs = lim.max_lmrs;
    a.max_lmr_block_size = 0x7fffffff;
    a.max_lmr_virtual_address = ~DAT_VADDR{0};
    a.max_pzs = 1 << 16;
    a.max_message_size = lim.max_message_size;
    a.max_rdma_size = lim.max_rdma_size;
    a.max_rmrs = lim.max_lmrs;
    a.max_rmr_target_address = ~DAT_VADDR{0};
    a.max_srqs = lim.max_srqs;
    a.max_ep_per_srq = lim.max_srqs > 0 ? lim.max_ep_per_srq : 0;
    a.max_recv_per_srq = lim.max_srqs > 0 ? lim.max_recv_per_srq : 0;
    a.max_iov_segments_per_rdma_read = lim.max_iov;
    a.max_iov_segments_per_rdma_write = lim.max_iov;
    a.max_rdma_read_in = lim.max_rdma_read_per_ep;
    a.max_rdma_read_out = lim.max_rdma_read_per_ep;
    a.max_rdma_read_per_ep_in_guaranteed = DAT_TRUE;
    a.max_rdma_read_per_ep_out_guaranteed = DAT_TRUE;
    a.zb_supported = DAT_FALSE;
    // Without IB extensions libdat2 answers dat_extension_op itself (NOT_IMPLEMENTED); with
    // them it routes the op to handle_extendedop_func (util/extension.cpp).
    if (has_ib_extensions(lim)) {
        a.extension_supported = DAT_EXTENSION_IB;
        a.extension_version = DAT_IB_EXTENSION_VERSION;
    } else {
        a.extension_supported = DAT_EXTENSION_NONE;
        a.extension_version = 0;
    }
    a.num_transport_attr = 0;
    a.transport_attr = nullptr;
    a.num_vendor_attr = 0;
    a.vendor_attr = nullptr;
    *out = a;
}

void fill_provider_attr(Ia *ia, DAT_PROVIDER_ATTR *out) noexcept {
    const ProviderInstance *inst = ia->instance;
    DAT_PROVIDER_ATTR a{};
    copy_name(a.provider_name, inst->name);
    a.provider_version_major = 2;
    a.provider_version_minor = 0;
    // Must echo the dat.conf key exactly, or the registry cannot find the entry at close.
    a.dapl_version_major = inst->info.dapl_version_major;
    a.dapl_version_minor = inst->info.dapl_version_minor;
    a.is_thread_safe = inst->info.is_thread_safe;
    a.lmr_mem_types_supported = static_cast<DAT_MEM_TYPE>(DAT_MEM_TYPE_VIRTUAL | DAT_MEM_TYPE_LMR);
    a.iov_ownership_on_return = DAT_IOV_CONSUMER;
    a.dat_qos_supported = DAT_QOS_BEST_EFFORT;
    // What the transport honours (Limits::completion_flags); a device transport may
    // overwrite it from ia_attributes.
    a.completion_flags_supported = ia->transport->limits().completion_flags;
    a.max_private_data_size = static_cast<DAT_COUNT>(kMaxPrivateData);
    a.supports_multipath = DAT_FALSE;
    a.ep_creator = DAT_PSP_CREATES_EP_NEVER;
    a.pz_support = DAT_PZ_UNIQUE;
    a.optimal_buffer_alignment = DAT_OPTIMAL_ALIGNMENT;
    // evd_stream_merging_supported is declared const in the reference struct; write it
    // through a byte view. We can merge any streams except async with the others.
    DAT_BOOLEAN merge[6][6];
    for (int i = 0; i < 6; ++i)
        for (int j = 0; j < 6; ++j) merge[i][j] = (i == 5 || j == 5) ? DAT_FALSE : DAT_TRUE;
    std::memcpy(reinterpret_cast<unsigned char *>(&a) +
                    offsetof(DAT_PROVIDER_ATTR, evd_stream_merging_supported),
                merge, sizeof merge);
    // Shared receive queues (util/srq.hpp): the low watermark, srq_query's counts and an
    // SRQ in another PZ than its endpoints (its buffers are checked against its own PZ)
    // come with them; ep_recv_query with the transport's ep_recv_info.
    const bool srq = ia->transport->limits().max_srqs > 0;
    a.srq_supported = srq ? DAT_TRUE : DAT_FALSE;
    a.srq_watermarks_supported = srq ? 1 : 0;
    a.srq_ep_pz_difference_supported = srq ? DAT_TRUE : DAT_FALSE;
    a.srq_info_supported = srq ? 1 : 0;
    a.ep_recv_info_supported = srq ? 1 : 0;
    a.lmr_sync_req = DAT_FALSE;
    a.dto_async_return_guaranteed = DAT_FALSE;
    a.rdma_write_for_rdma_read_req = DAT_FALSE;
    a.rdma_read_lmr_rmr_context_exposure = DAT_FALSE;
    a.rmr_scope_supported = ia->transport->limits().rmr_scope;
    a.is_signal_safe = DAT_FALSE;
    a.ha_supported = DAT_FALSE;
    a.ha_loadbalancing = DAT_HA_LB_NONE;
    // The IA's own (build_specific_attrs): valid until dat_ia_close.
    a.num_provider_specific_attr = ia->specific.count;
    a.provider_specific_attr = ia->specific.attrs;
    std::memcpy(static_cast<void *>(out), &a, sizeof a);
}

void default_ep_attr(const Limits &lim, DAT_EP_ATTR *out) noexcept {
    // The defaults an EP gets when dat_ep_create has no attributes, never above what the
    // transport can do: an EP created with them must be one dat_ep_create would accept
    // if they were passed explicitly (a send/recv-only transport has no RDMA reads).
    const auto at_most = [](DAT_COUNT want, DAT_COUNT limit) {
        return want < limit ? want : limit;
    };
    const bool rdma = lim.max_rdma_size > 0;
    DAT_EP_ATTR a{};
    a.service_type = DAT_SERVICE_TYPE_RC;
    a.max_message_size = lim.max_message_size;
    a.max_rdma_size = lim.max_rdma_size;
    a.qos = DAT_QOS_BEST_EFFORT;
    a.recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
    a.request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
    a.max_recv_dtos = at_most(256, lim.max_dto_per_ep);
    a.max_request_dtos = at_most(256, lim.max_dto_per_ep);
    a.max_recv_iov = at_most(4, lim.max_iov);
    a.max_request_iov = at_most(4, lim.max_iov);
    a.max_rdma_read_in = rdma ? at_most(8, lim.max_rdma_read_per_ep) : 0;
    a.max_rdma_read_out = rdma ? at_most(8, lim.max_rdma_read_per_ep) : 0;
    a.srq_soft_hw = DAT_HW_DEFAULT;
    a.max_rdma_read_iov = rdma ? at_most(4, lim.max_iov) : 0;
    a.max_rdma_write_iov = rdma ? at_most(4, lim.max_iov) : 0;
    *out = a;
}

}  // namespace opendat::util
