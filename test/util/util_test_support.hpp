// What util's tests share: a transport with nothing but its limits and address, and an IA
// name registered with util's provider table (no libdat2, no registry).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>

#include <dat2/udat.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "util/objects.hpp"
#include "util/provider_table.hpp"

namespace opendat::util::test {

// Where a test holds a thread inside a transport call, to find out who waits for it. The
// state is static: the held thread must not touch a transport deleted meanwhile.
struct Gate {
    std::atomic<bool> armed{false}, inside{false}, open{false};
    void arm() noexcept {
        inside.store(false);
        open.store(false);
        armed.store(true);
    }
    void pass() noexcept {
        if (!armed.exchange(false)) return;
        inside.store(true);
        while (!open.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    // False if no thread came in within 10 s.
    bool wait_inside() const noexcept {
        for (int ms = 0; !inside.load(); ++ms) {
            if (ms == 10'000) return false;
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        return true;
    }
};

// Only what every transport must give: its limits (from ia_params "<mtu> <max iov>") and
// its address. Everything else is util::Transport's default.
class BareTransport : public Transport {
  public:
    explicit BareTransport(const std::string &params) {
        int mtu = 0, iov = 0;
        if (std::sscanf(params.c_str(), "%d %d", &mtu, &iov) == 2) {
            limits_.transport_mtu = mtu;
            limits_.max_iov = iov;
        }
        limits_.transport_name = "bare";
        addr_.sin_family = AF_INET;
        addr_.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    }
    const Limits &limits() const noexcept override { return limits_; }
    const sockaddr *address() const noexcept override {
        return reinterpret_cast<const sockaddr *>(&addr_);
    }

  private:
    Limits limits_;
    sockaddr_in addr_{};
};

// One registered IA name and the table util built for it.
struct Instance {
    DAT_PROVIDER_INFO info{};
    const DAT_PROVIDER *table = nullptr;

    Instance(const char *name, const char *params, MakeTransportFn make) {
        std::snprintf(info.ia_name, sizeof info.ia_name, "%s", name);
        info.dapl_version_major = 2;
        info.is_thread_safe = DAT_FALSE;
        provider_init(&info, params, make);
        if (ProviderInstance *inst = find_instance(name)) table = &inst->table;
    }
    ~Instance() { provider_fini(&info); }

    DAT_IA_HANDLE open() const {
        DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
        DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
        EXPECT_EQ(table->ia_open_func(const_cast<char *>(info.ia_name), 8, &async, &ia),
                  DAT_SUCCESS);
        return ia;
    }
};

}  // namespace opendat::util::test
