// dat_trclvl_query / dat_trclvl_modify (include/dat2/dat_trace.h): the DAT component is
// this library's trace domain, the DAPL component is forwarded to the open providers.
#include "dispatch.hpp"
#include "ia_state.hpp"

#include <dat2/dat_trace.h>

using namespace opendat::dat;

namespace {
bool known(DAT_TRACE_COMPONENT c) noexcept {
    const int v = static_cast<int>(c);  // a C caller can pass any int
    return v == DAT_TRACE_COMPONENT_DAT || v == DAT_TRACE_COMPONENT_DAPL;
}
}  // namespace

extern "C" {

DAT_RETURN dat_trclvl_query(DAT_TRACE_COMPONENT component, DAT_UINT32 *level) {
    if (!known(component)) return error(DAT_INVALID_PARAMETER, DAT_INVALID_ARG1);
    if (level == nullptr) return error(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    if (component == DAT_TRACE_COMPONENT_DAT) {
        *level = static_cast<DAT_UINT32>(opendat::trace::dat_domain().level());
        return DAT_SUCCESS;
    }
    return query_provider_level(level);
}

DAT_RETURN dat_trclvl_modify(DAT_TRACE_COMPONENT component, DAT_UINT32 level) {
    if (!known(component)) return error(DAT_INVALID_PARAMETER, DAT_INVALID_ARG1);
    if (level > DAT_TRACE_LEVEL_MAX) return error(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    if (component == DAT_TRACE_COMPONENT_DAT) {
        opendat::trace::dat_domain().set_level(static_cast<int>(level));
        DAT_TRC(opendat::trace::kNormal, "trclvl", "DAT trace level set to %u", level);
        return DAT_SUCCESS;
    }
    return modify_provider_level(level);
}

}  // extern "C"
