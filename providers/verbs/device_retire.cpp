#include "verbs/device_retire.hpp"

#include <cstring>

#include "trace/trace.hpp"
#include "util/grace.hpp"
#include "verbs/raii.hpp"

namespace opendat::verbs {

void trace_destroy_failure(int rc, const char *call) noexcept {
    DAPL_TRC(trace::kError, "verbs", "%s: %s (leaked)", call, std::strerror(rc));
}

namespace {

void traced(int rc, const char *call) noexcept {
    if (rc != 0) trace_destroy_failure(rc, call);
}

}  // namespace

void retire_replaced_qp(ibv_qp *qp) noexcept {
    if (qp == nullptr) return;
    util::grace::retire_after_call(
        util::Deferred{qp, [](void *p) { QpDel{}(static_cast<ibv_qp *>(p)); }});
}

void retire_srq(ibv_srq *srq) noexcept {
    if (srq == nullptr) return;
    util::grace::retire(util::Deferred{srq, [](void *p) {
                                           traced(ibv_destroy_srq(static_cast<ibv_srq *>(p)),
                                                  "ibv_destroy_srq");
                                       }});
}

void retire_pd(ibv_pd *pd) noexcept {
    if (pd == nullptr) return;
    util::grace::retire(util::Deferred{
        pd, [](void *p) { traced(ibv_dealloc_pd(static_cast<ibv_pd *>(p)), "ibv_dealloc_pd"); }});
}

}  // namespace opendat::verbs
