#include "dispatch.hpp"

namespace opendat::dat {

DAT_RETURN not_implemented(const char *function, const DAT_PROVIDER *provider) noexcept {
    DAT_TRC(trace::kNormal, "api",
            "%s: provider %s leaves this function empty: DAT_NOT_IMPLEMENTED", function,
            provider != nullptr && provider->device_name != nullptr ? provider->device_name
                                                                    : "(unnamed)");
    return kNotImplemented;
}

}  // namespace opendat::dat
