// A tiny shared library both the test executable and the fake provider plugin link to:
// the plugin records what the front end made it do, the tests read it back. It outlives
// plugin unloads, so init/fini counts survive dlclose.
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

#define FJ_API __attribute__((visibility("default")))

FJ_API void fj_record(const char *event, const void *handle);
FJ_API int fj_count(const char *event);
FJ_API const void *fj_last_handle(void);
// Copies the last event name into buf (size n).
FJ_API void fj_last_event(char *buf, int n);
FJ_API void fj_set_int(const char *key, long value);
FJ_API long fj_get_int(const char *key);

#ifdef __cplusplus
}
#endif
