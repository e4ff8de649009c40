#include "verbs/table.hpp"

#include <algorithm>
#include <cstdio>
#include <mutex>

#include "util/entries.hpp"
#include "verbs/cq_evd.hpp"
#include "verbs/mem.hpp"
#include "verbs/transport.hpp"

namespace opendat::verbs {

namespace {

void copy_str(char *dst, const char *src) noexcept {
    std::snprintf(dst, DAT_NAME_MAX_LENGTH, "%s", src);
}

DAT_COUNT cap(std::uint64_t v) noexcept {
    return static_cast<DAT_COUNT>(std::min<std::uint64_t>(v, 0x7fffffff));
}

// util fills the generic attributes; the device's own limits and identity replace the
// generic values here.
DAT_RETURN ia_query(DAT_IA_HANDLE h, DAT_EVD_HANDLE *async_evd, DAT_IA_ATTR_MASK ia_mask,
                    DAT_IA_ATTR *ia_attr, DAT_PROVIDER_ATTR_MASK prov_mask,
                    DAT_PROVIDER_ATTR *prov_attr) noexcept {
    DAT_RETURN rc = util::entry::ia_query(h, async_evd, ia_mask, ia_attr, prov_mask, prov_attr);
    if (rc != DAT_SUCCESS) return rc;
    auto *ia = util::as<util::Ia>(h);
    auto *tr = static_cast<VerbsTransport *>(ia->transport.get());
    const Device &d = tr->device();
    const ibv_device_attr &a = d.attr;
    if (ia_attr != nullptr && ia_mask != 0) {
        copy_str(ia_attr->adapter_name, d.name.c_str());
        char vendor[DAT_NAME_MAX_LENGTH];
        std::snprintf(vendor, sizeof vendor, "OpenDAT verbs (vendor 0x%x, part 0x%x)", a.vendor_id,
                      a.vendor_part_id);
        copy_str(ia_attr->vendor_name, vendor);
        ia_attr->hardware_version_major = a.hw_ver;
        ia_attr->hardware_version_minor = 0;
        unsigned fw_major = 0, fw_minor = 0;
        std::sscanf(a.fw_ver, "%u.%u", &fw_major, &fw_minor);
        ia_attr->firmware_version_major = fw_major;
        ia_attr->firmware_version_minor = fw_minor;
        ia_attr->max_rdma_read_per_ep_in = a.max_qp_rd_atom;
        ia_attr->max_rdma_read_per_ep_out = a.max_qp_init_rd_atom;
        ia_attr->max_rdma_read_in = cap(static_cast<std::uint64_t>(a.max_res_rd_atom));
        ia_attr->max_rdma_read_out = cap(static_cast<std::uint64_t>(a.max_res_rd_atom));
        ia_attr->max_lmr_block_size = cap(a.max_mr_size);
        ia_attr->max_pzs = a.max_pd;
        ia_attr->max_rmrs = tr->mw_supported() ? a.max_mw : 0;
        ia_attr->max_srqs = 0;  // SRQ not implemented
        ia_attr->max_ep_per_srq = 0;
        ia_attr->max_recv_per_srq = 0;
    }
    if (prov_attr != nullptr && prov_mask != 0) {
        prov_attr->max_private_data_size = kPdataConnect;
        prov_attr->completion_flags_supported = static_cast<DAT_COMPLETION_FLAGS>(
            DAT_COMPLETION_SUPPRESS_FLAG | DAT_COMPLETION_SOLICITED_WAIT_FLAG |
            DAT_COMPLETION_BARRIER_FENCE_FLAG);
        prov_attr->dto_async_return_guaranteed = DAT_TRUE;  // posts only queue work
    }
    return DAT_SUCCESS;
}

DAT_RETURN ep_reset(DAT_EP_HANDLE h) noexcept {
    DAT_RETURN rc = util::entry::ep_reset(h);
    if (rc == DAT_SUCCESS) {
        auto *ep = util::as<util::Ep>(h);
        static_cast<VerbsTransport *>(ep->ia->transport.get())->ep_reset_qp(ep);
    }
    return rc;
}

}  // namespace

void patch_table(util::ProviderInstance *inst) noexcept {
    static std::mutex mu;
    std::lock_guard lk(mu);
    DAT_PROVIDER &t = inst->table;
    if (t.lmr_create_func == &entry::lmr_create) return;
    t.ia_query_func = ia_query;
    t.pz_create_func = entry::pz_create;
    t.pz_free_func = entry::pz_free;
    t.lmr_create_func = entry::lmr_create;
    t.lmr_free_func = entry::lmr_free;
    t.rmr_create_func = entry::rmr_create;
    t.rmr_bind_func = entry::rmr_bind;
    t.rmr_free_func = entry::rmr_free;
    t.evd_create_func = entry::evd_create;
    t.evd_dequeue_func = entry::evd_dequeue;
    t.evd_wait_func = entry::evd_wait;
    t.evd_resize_func = entry::evd_resize;
    t.evd_free_func = entry::evd_free;
    t.evd_modify_cno_func = entry::evd_modify_cno;
    t.evd_set_unwaitable_func = entry::evd_set_unwaitable;
    t.cno_wait_func = entry::cno_wait;
    t.ep_reset_func = ep_reset;
}

}  // namespace opendat::verbs
