// Thread cancellation in the front end: dat_ia_open and dat_ia_close load, initialise and
// unload providers, whose code libdat2 does not control, so libdat2 holds cancellation off
// around them (dat/ia.cpp). The fake provider's "slow" entry sleeps in its
// dat_provider_init, a cancellation point, which the registry calls inside dat_ia_open.
#include "frontend_test.hpp"

#include <pthread.h>

#include <atomic>

#include "thread_cancel.hpp"

namespace {

struct OpenArgs {
    DAT_RETURN open_rc = 0;
    DAT_RETURN close_rc = 0;
    std::atomic<bool> returned{false};
};

void *open_close_with_cancel_pending(void *p) {
    auto *a = static_cast<OpenArgs *>(p);
    pthread_cancel(pthread_self());  // deferred: pending from here on
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    a->open_rc = fe::openv(fe::kSlow, 8, &evd, &ia, 2, 0, DAT_FALSE);
    if (a->open_rc == DAT_SUCCESS) a->close_rc = dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG);
    a->returned = true;
    return opendat_test::stop_here();
}

TEST(Cancel, PendingCancelDoesNotActInsideAProviderInit) {
    OpenArgs a;
    opendat_test::expect_cancelled_after_the_calls(open_close_with_cancel_pending, &a, a.returned,
                                                   opendat_test::nothing,
                                                   "dat_ia_open (the provider's init)");
    EXPECT_EQ(a.open_rc, DAT_SUCCESS) << std::hex << a.open_rc;
    EXPECT_EQ(a.close_rc, DAT_SUCCESS) << std::hex << a.close_rc;
    // The registry was left in order: the entry opens again.
    fe::Ia again(fe::kSlow);
    EXPECT_TRUE(again.ok()) << std::hex << again.status();
}

}  // namespace
