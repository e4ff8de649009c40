// A process-wide set of live DAT objects on the tcp provider (two IAs), stale handles of
// every type, and objects of another provider (the example provider), for the handle
// tests. Everything goes through libdat2 like any consumer.
#pragma once

#include <dat2/udat.h>
#include <dat2/dat_registry.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace handles_test {

constexpr const char *kIa = "ofa-v2-tcp-lo";
constexpr const char *kOther = "example";  // the example provider (samples/)

inline DAT_RETURN open_ia(const char *name, DAT_IA_HANDLE *ia) {
    DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
    return dat_ia_open(const_cast<DAT_NAME_PTR>(name), 8, &async, ia);
}

// Every object type of one IA.
struct Objects {
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE dto_evd = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE conn_evd = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE cr_evd = DAT_HANDLE_NULL;
    DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
    DAT_EP_HANDLE reserved_ep = DAT_HANDLE_NULL;
    DAT_LMR_HANDLE lmr = DAT_HANDLE_NULL;
    DAT_LMR_CONTEXT lmr_context = 0;
    DAT_RMR_HANDLE rmr = DAT_HANDLE_NULL;
    DAT_PSP_HANDLE psp = DAT_HANDLE_NULL;
    DAT_CONN_QUAL psp_qual = 0;
    DAT_RSP_HANDLE rsp = DAT_HANDLE_NULL;
    std::vector<char> buffer = std::vector<char>(4096);

    // Creates them all; false (with a gtest failure) on any error.
    bool create(const char *ia_name);
    void destroy();
};

// One of each type, created and freed again: their handles are stale.
struct Stale {
    DAT_PZ_HANDLE pz, cno, evd, ep, lmr, rmr, psp, rsp;
    DAT_IA_HANDLE ia;  // a closed IA's consumer handle
    bool create(const char *ia_name);
};

struct World {
    Objects a, b;  // two IAs of the tcp provider
    Stale stale{};
    DAT_IA_HANDLE other_ia = DAT_HANDLE_NULL;  // the example provider
    DAT_PZ_HANDLE other_pz = DAT_HANDLE_NULL;
    // Memory holding a byte copy of a live EP's first 256 bytes (provider word included):
    // what a handle into some other library's copy of our objects looks like.
    alignas(64) unsigned char forged[256]{};
    void *unmapped = nullptr;  // a page that was mapped and is no more
    // Readable heap that holds no object: the redzone just past a live block and a freed
    // block (under ASan: a redzone and quarantine, which the handle check's own load must
    // not be reported for; dat_calls fuzzer finding).
    std::uint64_t *heap_block = nullptr;  // 3 words, kept for the life of the process
    std::uintptr_t past_heap_block = 0;
    std::uintptr_t freed_heap_block = 0;

    static World &get();  // created at first use, lives until exit
};

// One kind of bad handle, named for failure messages.
struct Bad {
    std::string what;
    DAT_HANDLE handle;
};

// Garbage nobody issued: NULL-page values, misaligned, unmapped, a forged copy.
std::vector<Bad> garbage(World &w);

}  // namespace handles_test
