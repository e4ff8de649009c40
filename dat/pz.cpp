// Protection zone wrappers.
#include "ia_dispatch.hpp"

using namespace opendat::dat;

namespace {
constexpr DAT_RETURN kBadPz = error(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ);
}

extern "C" {

DAT_RETURN dat_pz_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE *pz) {
    return forward_ia<&DAT_PROVIDER::pz_create_func>("dat_pz_create", ia, pz);
}
DAT_RETURN dat_pz_query(DAT_PZ_HANDLE pz, DAT_PZ_PARAM_MASK mask, DAT_PZ_PARAM *param) {
    return forward<&DAT_PROVIDER::pz_query_func, kBadPz>("dat_pz_query", pz, mask, param);
}
DAT_RETURN dat_pz_free(DAT_PZ_HANDLE pz) {
    return forward_end<&DAT_PROVIDER::pz_free_func, kBadPz>("dat_pz_free", pz);
}

}  // extern "C"
