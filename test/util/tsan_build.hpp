// Whether this test is compiled for ThreadSanitizer, found out here on its own: the lock
// annotation tests must exist in every TSan build even if the library's own detection
// (util/futex_mutex.hpp, OPENDAT_TSAN_LOCKS) broke, so that they fail rather than vanish.
#pragma once

#if defined(__SANITIZE_THREAD__)
#define OPENDAT_TEST_TSAN_BUILD 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define OPENDAT_TEST_TSAN_BUILD 1
#endif
#endif
