#include "verbs/device.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "trace/trace.hpp"
#include "util/netdev.hpp"
#include "util/status.hpp"

namespace opendat::verbs {

namespace {

// "<verbs device> <port>": the port's IPv4-mapped GID (RoCE v1/v2 both list one per
// address of the netdev) gives the address rdma_cm binds to.
enum class DevLookup { NotADevice, NoAddress, Found };
DevLookup from_verbs_device(const std::string &name, int port, sockaddr_storage *out) {
    int n = 0;
    ibv_context **devs = rdma_get_devices(&n);
    if (devs == nullptr) return DevLookup::NotADevice;
    DevLookup r = DevLookup::NotADevice;
    for (int d = 0; d < n && r == DevLookup::NotADevice; ++d) {
        if (name != ibv_get_device_name(devs[d]->device)) continue;
        r = DevLookup::NoAddress;
        ibv_port_attr pa{};
        if (ibv_query_port(devs[d], static_cast<std::uint8_t>(port), &pa) != 0) break;
        for (int g = 0; g < pa.gid_tbl_len; ++g) {
            ibv_gid gid{};
            if (ibv_query_gid(devs[d], static_cast<std::uint8_t>(port), g, &gid) != 0) continue;
            static constexpr unsigned char kV4Mapped[12] = {0, 0, 0, 0, 0,    0,
                                                            0, 0, 0, 0, 0xff, 0xff};
            if (std::memcmp(gid.raw, kV4Mapped, sizeof kV4Mapped) != 0) continue;
            auto *sin = reinterpret_cast<sockaddr_in *>(out);
            *sin = sockaddr_in{};
            sin->sin_family = AF_INET;
            std::memcpy(&sin->sin_addr, gid.raw + 12, 4);
            r = DevLookup::Found;
            break;
        }
    }
    rdma_free_devices(devs);
    return r;
}

}  // namespace

DAT_RETURN resolve_address(const char *ia_name, const std::string &params, Device *out) noexcept {
    try {
        std::string what;
        long number = 0;
        if (!util::split_ia_params(params, &what, &number)) {
            DAPL_TRC(trace::kError, "verbs",
                     "IA %s: empty ia_params; want \"<netdev|address|host|device> [port]\"",
                     ia_name);
            return util::err(DAT_INVALID_ADDRESS);
        }
        const int port = number > 0 && number <= 255 ? static_cast<int>(number) : 0;
        socklen_t len = 0;
        bool ok = util::netdev_address(what, &out->addr, &len);
        if (!ok) {
            switch (from_verbs_device(what, port > 0 ? port : 1, &out->addr)) {
                case DevLookup::Found:
                    ok = true;
                    break;
                case DevLookup::NoAddress:
                    DAPL_TRC(trace::kError, "verbs",
                             "IA %s: RDMA device %s port %d has no IPv4 address in its GID table",
                             ia_name, what.c_str(), port > 0 ? port : 1);
                    return util::err(DAT_INVALID_ADDRESS);
                case DevLookup::NotADevice:
                    ok = util::host_address(what, &out->addr, &len);
                    break;
            }
        }
        if (!ok) {
            DAPL_TRC(trace::kError, "verbs",
                     "IA %s: '%s' is no network device, RDMA device, address or host name "
                     "(ia_params \"%s\")",
                     ia_name, what.c_str(), params.c_str());
            return util::err(DAT_INVALID_ADDRESS);
        }
        out->what = what;
        out->want_port = port;
        return DAT_SUCCESS;
    } catch (...) {
        return util::kNoMemory;
    }
}

DAT_RETURN bind_device(const char *ia_name, rdma_event_channel *ch, Device *out) noexcept {
    try {
        const std::string &what = out->what;
        const int port = out->want_port;
        char buf[INET6_ADDRSTRLEN + 16];
        util::addr_str(reinterpret_cast<sockaddr *>(&out->addr), buf, sizeof buf);
        rdma_cm_id *id = nullptr;
        if (rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP) != 0) {
            DAPL_TRC(trace::kError, "verbs", "IA %s: rdma_create_id: %s", ia_name,
                     std::strerror(errno));
            return util::kInternal;
        }
        out->bound.reset(id);
        if (rdma_bind_addr(id, reinterpret_cast<sockaddr *>(&out->addr)) != 0 ||
            id->verbs == nullptr) {
            int e = errno;
            DAPL_TRC(trace::kError, "verbs",
                     "IA %s: address %s (from '%s') is not served by an RDMA device: %s", ia_name,
                     buf, what.c_str(), std::strerror(e));
            return util::err(DAT_INVALID_ADDRESS);
        }
        out->ctx = id->verbs;
        out->port = id->port_num;
        out->name = ibv_get_device_name(id->verbs->device);
        if (port > 0 && port != out->port)
            DAPL_TRC(trace::kWarn, "verbs", "IA %s: ia_params names port %d; %s is on %s port %d",
                     ia_name, port, buf, out->name.c_str(), out->port);
        if (ibv_query_device(out->ctx, &out->attr) != 0 ||
            ibv_query_port(out->ctx, out->port, &out->port_attr) != 0) {
            DAPL_TRC(trace::kError, "verbs", "IA %s: querying %s: %s", ia_name, out->name.c_str(),
                     std::strerror(errno));
            return util::kInternal;
        }
        DAPL_TRC(trace::kNormal, "verbs", "IA %s: %s on %s port %d", ia_name, buf,
                 out->name.c_str(), out->port);
        return DAT_SUCCESS;
    } catch (...) {
        return util::kNoMemory;
    }
}

}  // namespace opendat::verbs
