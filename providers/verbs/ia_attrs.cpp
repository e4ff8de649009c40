// dat_ia_query's device part (the VerbsTransport::ia_attributes hook): util filled the
// generic attributes, and the limits in util::Limits from ibv_query_device/port (see
// VerbsTransport::open); the device's identity and the limits Limits has no field for
// replace the generic values here.
#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "verbs/transport.hpp"

namespace opendat::verbs {

namespace {

void copy_str(char *dst, const char *src) noexcept {
    std::snprintf(dst, DAT_NAME_MAX_LENGTH, "%s", src);
}

DAT_COUNT cap(std::uint64_t v) noexcept {
    return static_cast<DAT_COUNT>(std::min<std::uint64_t>(v, 0x7fffffff));
}

}  // namespace

void VerbsTransport::ia_attributes(DAT_IA_ATTR *ia_attr, DAT_PROVIDER_ATTR *prov_attr) noexcept {
    const ibv_device_attr &a = dev_.attr;
    if (ia_attr != nullptr) {
        copy_str(ia_attr->adapter_name, dev_.name.c_str());
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
        ia_attr->max_rmrs = mw_supported() ? a.max_mw : 0;
    }
    if (prov_attr != nullptr) {
        prov_attr->max_private_data_size = kPdataConnect;
        // Each is honoured (post.cpp): suppressed/unsignalled requests are posted without
        // IBV_SEND_SIGNALED, solicited sends carry IBV_SEND_SOLICITED and solicited-wait
        // receive EVDs arm for solicited completions only, a fence is IBV_SEND_FENCE.
        prov_attr->completion_flags_supported = static_cast<DAT_COMPLETION_FLAGS>(
            DAT_COMPLETION_SUPPRESS_FLAG | DAT_COMPLETION_SOLICITED_WAIT_FLAG |
            DAT_COMPLETION_UNSIGNALLED_FLAG | DAT_COMPLETION_BARRIER_FENCE_FLAG);
        prov_attr->dto_async_return_guaranteed = DAT_TRUE;  // posts only queue work
    }
}

}  // namespace opendat::verbs
