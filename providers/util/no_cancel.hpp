// Provider entry points are not thread-cancellation points (common/cancel/no_cancel.hpp
// says why a cancellation inside OpenDAT is fatal). The entries hold cancellation off for
// their duration (NoCancelEntry), except the hot ones (posts, dequeue), which cannot pay
// two atomic operations per call: the system calls they reach are made non-cancellable
// one by one instead (sys_io.hpp). A thread blocked in dat_evd_wait or dat_cno_wait is
// released the DAT way (dat_evd_set_unwaitable, a timeout).
#pragma once

#include <dat2/udat.h>

#include <cancel/no_cancel.hpp>

#include "util/grace.hpp"

namespace opendat::util {

// An entry point's function, run with cancellation held off: NoCancelEntry<&fn>::call has
// fn's exact type, for a DAT_PROVIDER slot. Every entry also runs inside a grace::Guard:
// what it checked is not deleted under it (util/grace.hpp).
template <auto Fn>
struct NoCancelEntry;
template <class... Args, DAT_RETURN (*Fn)(Args...) noexcept>
struct NoCancelEntry<Fn> {
    static DAT_RETURN call(Args... args) noexcept {
        NoCancel nc;
        grace::Guard g;
        return Fn(args...);
    }
};

}  // namespace opendat::util
