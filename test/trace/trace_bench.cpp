// Cost of trace points. A disabled point should be one relaxed load and a compare
// (compare BM_DisabledTracePoint with BM_Baseline); an enabled one is dominated by write(2).
#include "trace/trace.hpp"

#include <benchmark/benchmark.h>

namespace tr = opendat::trace;

static void BM_Baseline(benchmark::State &state) {
    int x = 0;
    for (auto _ : state) benchmark::DoNotOptimize(++x);
}
BENCHMARK(BM_Baseline);

static void BM_DisabledTracePoint(benchmark::State &state) {
    tr::dat_domain().set_level(tr::kError);
    int x = 0;
    for (auto _ : state) {
        DAT_TRC(tr::kDetail, "bench", "value %d", ++x);
        benchmark::DoNotOptimize(x);
    }
}
BENCHMARK(BM_DisabledTracePoint);

static void BM_EnabledTracePointToDevNull(benchmark::State &state) {
    setenv("DAT_TRACE_DEST", "/dev/null", 1);
    tr::dat_domain().configure_from_environment();
    tr::dat_domain().set_level(tr::kDetail);
    int x = 0;
    for (auto _ : state) DAT_TRC(tr::kDetail, "bench", "value %d", ++x);
    tr::dat_domain().set_level(tr::kError);
}
BENCHMARK(BM_EnabledTracePointToDevNull);

BENCHMARK_MAIN();
