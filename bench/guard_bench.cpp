// The cost errshim adds: a guarded call next to a direct one (the happy path
// must cost nothing), and one diagnosis of a seed message on the embedded
// catalog. Run: build/bench/errshim_bench
#include <benchmark/benchmark.h>

#include <errshim/errshim.hpp>

namespace {

__attribute__((noinline)) int work(int x) {
  benchmark::DoNotOptimize(x);
  return x * 3 + 1;
}

void BM_DirectCall(benchmark::State& state) {
  int x = 1;
  for (auto _ : state) benchmark::DoNotOptimize(x = work(x));
}
BENCHMARK(BM_DirectCall);

void BM_GuardedCall(benchmark::State& state) {
  const auto catalog = errshim::Catalog::embedded();
  int x = 1;
  for (auto _ : state) benchmark::DoNotOptimize(x = errshim::guard([&] { return work(x); }, *catalog));
}
BENCHMARK(BM_GuardedCall);

void BM_DiagnoseSeedMessage(benchmark::State& state) {
  const auto catalog = errshim::Catalog::embedded();
  const std::string msg = "Error: kv_cache_enabled=true is not supported";
  for (auto _ : state) benchmark::DoNotOptimize(catalog->diagnose(msg));
}
BENCHMARK(BM_DiagnoseSeedMessage);

void BM_DiagnoseUnknownMessage(benchmark::State& state) {
  const auto catalog = errshim::Catalog::embedded();
  const std::string msg = "Error: something nobody has catalogued went wrong at step 7";
  for (auto _ : state) benchmark::DoNotOptimize(catalog->diagnose(msg));
}
BENCHMARK(BM_DiagnoseUnknownMessage);

}  // namespace

BENCHMARK_MAIN();
