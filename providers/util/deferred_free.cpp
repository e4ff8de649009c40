#include "util/deferred_free.hpp"

#include "trace/trace.hpp"
#include "util/grace.hpp"

namespace opendat::util {

void DeferredFree::park(Deferred d) noexcept {
    std::lock_guard lk(mu_);
    try {
        parked_.push_back(d);
    } catch (...) {
        DAPL_TRC(trace::kError, "util", "no memory to park freed object %p: leaked", d.obj);
    }
}

void DeferredFree::retire_after_grace(std::vector<Deferred> batch) noexcept {
    grace::retire(std::move(batch));
}

std::vector<Deferred> DeferredFree::take() noexcept {
    std::vector<Deferred> batch;
    std::lock_guard lk(mu_);
    batch.swap(parked_);
    return batch;
}

}  // namespace opendat::util
