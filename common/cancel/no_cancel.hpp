// Thread cancellation held off for one scope (libdat2's entries and the providers').
//
// OpenDAT is C++ behind a noexcept C boundary. glibc carries out a pthread_cancel as a
// forced unwind from the cancellation point (epoll_wait, recv, pthread_cond_wait, open,
// close, ...): through a noexcept frame that is std::terminate, so a thread cancelled
// inside dat_evd_wait took the whole process down. (A C library would leave its locks held
// instead.) With cancellation held off, a pending cancel acts at the application's next
// cancellation point after the DAT call returns. Header-only; reached through the include
// path of opendat_trace, which both libdat2 and the providers link.
#pragma once

#include <pthread.h>

namespace opendat {

class NoCancel {
  public:
    NoCancel() noexcept { pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old_); }
    ~NoCancel() { pthread_setcancelstate(old_, nullptr); }
    NoCancel(const NoCancel &) = delete;
    NoCancel &operator=(const NoCancel &) = delete;

  private:
    int old_ = PTHREAD_CANCEL_ENABLE;
};

}  // namespace opendat
