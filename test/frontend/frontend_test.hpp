// Shared helpers for the libdat2 front-end tests.
#pragma once

#include <dat2/udat.h>
#include <dat2/dat_registry.h>
#include <dat2/dat_trace.h>

#include <gtest/gtest.h>

#include "journal.hpp"

#include <cstdint>
#include <string>

extern "C" DAT_RETURN dats_get_ia_handle(DAT_IA_HANDLE handle, DAT_IA_HANDLE *out);

namespace fe {

// IA names of the generated dat.conf (main.cpp): all served by the fake provider.
inline constexpr const char *kGood = "fe-good";      // extensions + debug hooks
inline constexpr const char *kGood2 = "fe-good2";    // same mode, second table
inline constexpr const char *kNoExt = "fe-noext";    // no extensions, no hooks
inline constexpr const char *kFail = "fe-fail";      // ia_open fails
inline constexpr const char *kThreadSafe = "fe-ts";  // registered as threadsafe
inline constexpr const char *kSlow = "fe-slow";      // init sleeps (a cancellation point)
inline constexpr int kConfEntries = 6;

inline constexpr DAT_RETURN kInvalidIa = 0x8005000b;
inline constexpr DAT_RETURN kNotImplemented = 0xBFFF0000;
inline constexpr DAT_RETURN kNotRegistered = 0x800A0064;

// dat_ia_openv with a const name (the reference prototype takes a non-const DAT_NAME_PTR).
inline DAT_RETURN openv(const char *name, DAT_COUNT qlen, DAT_EVD_HANDLE *evd, DAT_IA_HANDLE *ia,
                        DAT_UINT32 major, DAT_UINT32 minor, DAT_BOOLEAN thread_safe) {
    return dat_ia_openv(const_cast<DAT_NAME_PTR>(name), qlen, evd, ia, major, minor, thread_safe);
}

inline std::string slot(int n) {
    return "slot:" + std::to_string(n);
}

// Opens `name` (ASSERT-style failure reported by the caller checking ok()).
class Ia {
  public:
    explicit Ia(const char *name, DAT_BOOLEAN thread_safe = DAT_FALSE) {
        DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
        status_ = openv(name, 8, &evd, &ia_, 2, 0, thread_safe);
    }
    ~Ia() {
        if (status_ == DAT_SUCCESS && ia_ != DAT_HANDLE_NULL)
            dat_ia_close(ia_, DAT_CLOSE_ABRUPT_FLAG);
    }
    Ia(const Ia &) = delete;
    Ia &operator=(const Ia &) = delete;
    bool ok() const { return status_ == DAT_SUCCESS; }
    DAT_RETURN status() const { return status_; }
    DAT_IA_HANDLE handle() const { return ia_; }
    std::uintptr_t index() const { return reinterpret_cast<std::uintptr_t>(ia_); }
    void *raw() const {
        DAT_IA_HANDLE raw = DAT_HANDLE_NULL;
        return dats_get_ia_handle(ia_, &raw) == DAT_SUCCESS ? raw : nullptr;
    }
    const DAT_PROVIDER *provider() const {
        return *static_cast<const DAT_PROVIDER *const *>(raw());
    }
    // Closes now; returns the result.
    DAT_RETURN close(DAT_CLOSE_FLAGS flags = DAT_CLOSE_ABRUPT_FLAG) {
        const DAT_RETURN r = dat_ia_close(ia_, flags);
        if (r == DAT_SUCCESS) ia_ = DAT_HANDLE_NULL;
        return r;
    }

  private:
    DAT_IA_HANDLE ia_ = DAT_HANDLE_NULL;
    DAT_RETURN status_ = DAT_SUCCESS;
};

// A provider object the way providers build them: first word = provider table.
struct FakeObject {
    const DAT_PROVIDER *provider;
    int payload = 0;
};

inline int inits(const char *name) {
    return fj_count((std::string("init:") + name).c_str());
}
inline int finis(const char *name) {
    return fj_count((std::string("fini:") + name).c_str());
}

}  // namespace fe
