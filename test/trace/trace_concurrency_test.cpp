// Concurrency: lines of concurrent threads never interleave; destinations can be
// reconfigured and levels changed while other threads trace.
#include "trace_test_util.hpp"

#include "trace/trace.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace tr = opendat::trace;
using namespace trace_test;

namespace {

class TraceConcurrency : public ::testing::Test {
  protected:
    CleanEnvironment env_;
    TempDir dir_;
};

// Checks every line of `text` and returns, per thread, the sequence numbers seen in order.
std::map<int, std::vector<int>> parse_lines(const std::string &text) {
    std::map<int, std::vector<int>> seen;
    for (const auto &l : split_lines(text)) {
        std::smatch m;
        EXPECT_TRUE(std::regex_match(l, m, line_regex())) << "broken line: " << l;
        if (m.empty()) continue;
        int t = -1, seq = -1, len = -1;
        const std::string msg = m[7];
        EXPECT_EQ(std::sscanf(msg.c_str(), "thread=%d seq=%d len=%d ", &t, &seq, &len), 3) << l;
        // The payload is intact: exactly len 'p's after the header.
        const auto space = msg.rfind(' ');
        EXPECT_EQ(msg.substr(space + 1), std::string(static_cast<std::size_t>(len), 'p')) << l;
        seen[t].push_back(seq);
    }
    return seen;
}

void emit_numbered(int thread, int count) {
    for (int i = 0; i < count; ++i) {
        const int len = (i * 37 + thread * 11) % 700;  // varied lengths, some lines > 512 bytes
        DAT_TRC(tr::kNormal, "mt", "thread=%d seq=%d len=%d %s", thread, i, len,
                std::string(len, 'p').c_str());
    }
}

TEST_F(TraceConcurrency, EightThreadsToOneFileKeepEveryLineIntact) {
    const std::string log = dir_.file("mt.log");
    set_env("DAT_TRACE_DEST", log);
    set_env("DAT_TRACE_LEVEL", "3");
    tr::dat_domain().configure_from_environment();

    constexpr int kThreads = 8, kLines = 2000;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) threads.emplace_back(emit_numbered, t, kLines);
    for (auto &th : threads) th.join();

    const auto seen = parse_lines(read_file(log));
    ASSERT_EQ(seen.size(), static_cast<std::size_t>(kThreads));
    for (const auto &[t, seqs] : seen) {
        ASSERT_EQ(seqs.size(), static_cast<std::size_t>(kLines)) << "thread " << t;
        for (int i = 0; i < kLines; ++i) ASSERT_EQ(seqs[i], i) << "thread " << t;
    }
}

TEST_F(TraceConcurrency, ReconfigureWhileOtherThreadsTrace) {
    const std::string a = dir_.file("a.log"), b = dir_.file("b.log");
    set_env("DAT_TRACE_LEVEL", "3");
    set_env("DAT_TRACE_DEST", a);
    tr::dat_domain().configure_from_environment();

    constexpr int kThreads = 4, kLines = 3000;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) threads.emplace_back(emit_numbered, t, kLines);
    // Only this thread touches the environment; the emitters never read it.
    for (int i = 0; i < 40; ++i) {
        set_env("DAT_TRACE_DEST", i % 2 ? a : b);
        tr::dat_domain().configure_from_environment();
        (void)tr::dat_domain().destinations();
        (void)tr::dat_domain().file_path(0);
        std::this_thread::yield();
    }
    for (auto &th : threads) th.join();

    // Every line went to exactly one of the files, whole.
    auto seen = parse_lines(read_file(a) + read_file(b));
    ASSERT_EQ(seen.size(), static_cast<std::size_t>(kThreads));
    for (auto &[t, seqs] : seen) {
        std::sort(seqs.begin(), seqs.end());
        ASSERT_EQ(seqs.size(), static_cast<std::size_t>(kLines)) << "thread " << t;
        for (int i = 0; i < kLines; ++i) ASSERT_EQ(seqs[i], i) << "thread " << t;
    }
}

TEST_F(TraceConcurrency, SetLevelWhileOtherThreadsTrace) {
    const std::string log = dir_.file("lvl.log");
    set_env("DAPL_TRACE_DEST", log);
    tr::dapl_domain().configure_from_environment();
    std::atomic<bool> stop{false};
    std::atomic<int> evaluated{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&] {
            while (!stop.load()) DAPL_TRC(tr::kDetail, "lvl", "n=%d", evaluated.fetch_add(1) + 1);
        });
    for (int i = 0; i < 200; ++i) {
        tr::dapl_domain().set_level(i % 2 ? tr::kDetail : tr::kError);
        std::this_thread::yield();
    }
    stop = true;
    for (auto &th : threads) th.join();
    // Arguments are evaluated exactly for the points that emitted.
    const auto lines = split_lines(read_file(log));
    EXPECT_EQ(static_cast<int>(lines.size()), evaluated.load());
    for (const auto &l : lines) EXPECT_TRUE(std::regex_match(l, line_regex())) << l;
}

}  // namespace
