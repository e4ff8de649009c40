// Thread cancellation and the provider (providers/util/no_cancel.hpp, sys_io.hpp): a DAT
// call is not a cancellation point. A pthread_cancel aimed at a thread inside a DAT call
// acts once the call has returned, at the application's next cancellation point:
//  - a thread cancelled while asleep in dat_evd_wait (in the provider's epoll_wait, or on
//    the EVD's condition variable) finishes the wait, then stops; the IA stays usable.
//    It used to take the process down (a forced unwind through a noexcept frame);
//  - a thread with a cancel already pending goes through posts and dequeues on a
//    connected endpoint (their system calls: sendmsg, recv, epoll_wait, and with every
//    frame traced the trace's write) and stops after;
//  - so does one that opens and closes an IA (the registry, the provider's sockets, its
//    progress thread).
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "dat_fixture.hpp"
// OPENDAT_SYS_VIA_LIBC: this build makes the hot system calls through libc (ThreadSanitizer
// builds), and those are cancellation points.
#include "util/sys_io.hpp"

#include "thread_cancel.hpp"

using namespace dattest;
using opendat_test::expect_cancelled_after_the_calls;
using opendat_test::nothing;
using opendat_test::stop_here;

namespace {

// Sets environment variables for one case, and takes them away however the case ends.
class EnvFor {
  public:
    void set(const char *name, const std::string &value) {
        setenv(name, value.c_str(), 1);
        names_.push_back(name);
    }
    ~EnvFor() {
        for (const char *n : names_) unsetenv(n);
    }

  private:
    std::vector<const char *> names_;
};

struct WaitArgs {
    DAT_EVD_HANDLE evd;
    DAT_RETURN rc = 0;
    std::atomic<bool> returned{false};
};

void *wait_then_stop(void *p) {
    auto *a = static_cast<WaitArgs *>(p);
    DAT_EVENT ev;
    DAT_COUNT nmore = 0;
    a->rc = dat_evd_wait(a->evd, 400000, 1, &ev, &nmore);
    a->returned = true;
    return stop_here();
}

void cancel_in_wait(const char *sleep_mode) {
    EnvFor env;
    env.set("DAT_TCP_WAIT_SLEEP", sleep_mode);
    env.set("DAT_TCP_WAIT_SPIN_US", "0");  // the wait sleeps at once
    Node n;
    ASSERT_EQ(n.open(), DAT_SUCCESS);
    ASSERT_EQ(n.make_ep(), DAT_SUCCESS);
    WaitArgs a;
    a.evd = n.recv_evd;
    expect_cancelled_after_the_calls(
        wait_then_stop, &a, a.returned,
        [](pthread_t t) {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));  // asleep in the wait
            ASSERT_EQ(pthread_cancel(t), 0);
        },
        "dat_evd_wait");
    EXPECT_EQ(DAT_GET_TYPE(a.rc), DAT_TIMEOUT_EXPIRED) << std::hex << a.rc;
    // Nothing was left locked or half done: the EVD and the IA still work.
    DAT_EVENT ev;
    EXPECT_EQ(DAT_GET_TYPE(dat_evd_dequeue(n.recv_evd, &ev)), DAT_QUEUE_EMPTY);
    DAT_COUNT nmore = 0;
    EXPECT_EQ(DAT_GET_TYPE(dat_evd_wait(n.recv_evd, 20000, 1, &ev, &nmore)), DAT_TIMEOUT_EXPIRED);
}

TEST(Cancel, ThreadCancelledInAnEpollWaitFinishesTheWaitThenStops) {
    cancel_in_wait("epoll");
}

TEST(Cancel, ThreadCancelledInAConditionWaitFinishesTheWaitThenStops) {
    cancel_in_wait("cv");
}

struct HotArgs {
    Node *node;
    Buffer *buf;
    std::atomic<int> posts{0}, dequeues{0};
    std::atomic<bool> returned{false};
};

void *hot_calls_with_cancel_pending(void *p) {
    auto *a = static_cast<HotArgs *>(p);
    pthread_cancel(pthread_self());  // deferred: pending from here on
    DAT_LMR_TRIPLET iov = a->buf->iov(0, 64);
    DAT_DTO_COOKIE ck{};
    for (int i = 0; i < 8; ++i) {
        ck.as_64 = static_cast<DAT_UINT64>(i);
        if (dat_ep_post_recv(a->node->ep, 1, &iov, ck, DAT_COMPLETION_DEFAULT_FLAG) == DAT_SUCCESS)
            ++a->posts;
        if (dat_ep_post_send(a->node->ep, 1, &iov, ck, DAT_COMPLETION_DEFAULT_FLAG) == DAT_SUCCESS)
            ++a->posts;
        for (int k = 0; k < 200; ++k) {
            DAT_EVENT ev;
            (void)dat_evd_dequeue(a->node->req_evd, &ev);
            (void)dat_evd_dequeue(a->node->recv_evd, &ev);
            ++a->dequeues;
        }
    }
    a->returned = true;
    return stop_here();
}

off_t size_of(const char *path) {
    struct stat st {};
    return stat(path, &st) == 0 ? st.st_size : -1;
}

void hot_calls(bool traced) {
#ifdef OPENDAT_SYS_VIA_LIBC
    GTEST_SKIP() << "ThreadSanitizer builds make the hot system calls through libc, whose "
                    "interceptors order threads for it (providers/util/sys_io.hpp); those calls "
                    "are cancellation points";
#endif
    EnvFor env;
    char trace_file[] = "/tmp/opendat-cancel-trace-XXXXXX";
    if (traced) {
        // Every frame traced from the hot paths: write(2), a cancellation point, on each.
        const int fd = mkstemp(trace_file);
        ASSERT_GE(fd, 0);
        close(fd);
        env.set("DAPL_TRACE_LEVEL", "10");
        env.set("DAPL_TRACE_DEST", trace_file);
    }
    Channel ch;
    Node s;
    int pid = connected_pair(s, ch);
    ASSERT_GT(pid, 0) << "open, listen, connect and accept";
    Buffer b;
    ASSERT_EQ(s.reg(&b, 4096), DAT_SUCCESS);
    HotArgs a;
    a.node = &s;
    a.buf = &b;
    const off_t traced_before = traced ? size_of(trace_file) : 0;
    expect_cancelled_after_the_calls(hot_calls_with_cancel_pending, &a, a.returned, nothing,
                                     "a post or a dequeue");
    EXPECT_EQ(a.posts.load(), 16);
    EXPECT_EQ(a.dequeues.load(), 8 * 200);
    if (traced) {
        // The thread's own posts were traced (the open and connect wrote lines before).
        EXPECT_GT(size_of(trace_file), traced_before) << "no frame was traced by the thread";
        unlink(trace_file);
    }
    kill(pid, SIGKILL);
    EXPECT_EQ(reap(pid), 128 + SIGKILL);
}

TEST(Cancel, PendingCancelDoesNotActInsidePostsAndDequeues) {
    hot_calls(false);
}

TEST(Cancel, PendingCancelDoesNotActInsideTracedPostsAndDequeues) {
    hot_calls(true);
}

struct OpenArgs {
    DAT_RETURN open_rc = 0, close_rc = 0;
    std::atomic<bool> returned{false};
};

void *open_close_with_cancel_pending(void *p) {
    auto *a = static_cast<OpenArgs *>(p);
    pthread_cancel(pthread_self());
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL;
    a->open_rc = dat_ia_open(const_cast<char *>(kIa), 8, &async_evd, &ia);
    if (a->open_rc == DAT_SUCCESS) a->close_rc = dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG);
    a->returned = true;
    return stop_here();
}

TEST(Cancel, PendingCancelDoesNotActInsideIaOpenAndClose) {
    OpenArgs a;
    expect_cancelled_after_the_calls(open_close_with_cancel_pending, &a, a.returned, nothing,
                                     "dat_ia_open or dat_ia_close");
    EXPECT_EQ(a.open_rc, DAT_SUCCESS) << std::hex << a.open_rc;
    EXPECT_EQ(a.close_rc, DAT_SUCCESS) << std::hex << a.close_rc;
}

}  // namespace
