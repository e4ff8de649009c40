// CNO wrappers (uDAPL only). The proxy agent is a 16-byte aggregate passed by value.
#include "ia_dispatch.hpp"

using namespace opendat::dat;

namespace {
constexpr DAT_RETURN kBadCno = error(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CNO);
}

extern "C" {

DAT_RETURN dat_cno_create(DAT_IA_HANDLE ia, DAT_OS_WAIT_PROXY_AGENT agent, DAT_CNO_HANDLE *cno) {
    return forward_ia<&DAT_PROVIDER::cno_create_func>("dat_cno_create", ia, agent, cno);
}
DAT_RETURN dat_cno_modify_agent(DAT_CNO_HANDLE cno, DAT_OS_WAIT_PROXY_AGENT agent) {
    return forward<&DAT_PROVIDER::cno_modify_agent_func, kBadCno>("dat_cno_modify_agent", cno,
                                                                  agent);
}
DAT_RETURN dat_cno_query(DAT_CNO_HANDLE cno, DAT_CNO_PARAM_MASK mask, DAT_CNO_PARAM *param) {
    return forward<&DAT_PROVIDER::cno_query_func, kBadCno>("dat_cno_query", cno, mask, param);
}
DAT_RETURN dat_cno_free(DAT_CNO_HANDLE cno) {
    return forward_end<&DAT_PROVIDER::cno_free_func, kBadCno>("dat_cno_free", cno);
}
DAT_RETURN dat_cno_wait(DAT_CNO_HANDLE cno, DAT_TIMEOUT timeout, DAT_EVD_HANDLE *evd) {
    return forward<&DAT_PROVIDER::cno_wait_func, kBadCno>("dat_cno_wait", cno, timeout, evd);
}

}  // extern "C"
