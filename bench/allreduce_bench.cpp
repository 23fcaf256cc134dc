// SPDX-License-Identifier: Apache-2.0
// The ordered all-reduce among replica threads against memcpy, in the same
// process: bus bandwidth (2(N-1)/N x bytes / time, NCCL's definition: the
// bytes each link must carry) against single-thread memcpy bandwidth.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "collector.h"
#include "systole/strategy.h"

namespace {

using namespace systole;

void BM_Memcpy(benchmark::State& state) {
  const std::size_t bytes = std::size_t(state.range(0));
  std::vector<char> from(bytes, 1), to(bytes);
  for (auto _ : state) {
    std::memcpy(to.data(), from.data(), bytes);
    benchmark::ClobberMemory();
  }
  state.counters["GB/s"] =
      benchmark::Counter(double(bytes) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_AllReduce(benchmark::State& state) {
  const std::size_t bytes = std::size_t(state.range(0));
  const uint32_t replicas = uint32_t(state.range(1));
  std::vector<std::vector<float>> buffers(replicas, std::vector<float>(bytes / sizeof(float), 1.0f));
  Strategy strategy(replicas);
  for (auto _ : state) {
    const Status status = strategy.run([&](uint32_t r) { return strategy.all_reduce_sum(r, buffers[r]); });
    if (!status.ok()) state.SkipWithError(status.to_string().c_str());
  }
  const double bus_bytes = 2.0 * (replicas - 1) / replicas * double(bytes);
  state.counters["GB/s"] =
      benchmark::Counter(bus_bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

constexpr int64_t kSizes[] = {1 << 20, 16 << 20, 64 << 20};

BENCHMARK(BM_Memcpy)->Arg(1 << 20)->Arg(16 << 20)->Arg(64 << 20)->UseRealTime()->Unit(
    benchmark::kMillisecond);
BENCHMARK(BM_AllReduce)
    ->ArgsProduct({{1 << 20, 16 << 20, 64 << 20}, {2, 4}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  bench::Collector collector("GB/s");
  benchmark::RunSpecifiedBenchmarks(&collector);
  benchmark::Shutdown();
  std::printf("\nordered all-reduce bus bandwidth vs memcpy, GB/s\n%10s %9s %10s %10s %7s\n", "bytes",
              "replicas", "allreduce", "memcpy", "ratio");
  for (int64_t size : kSizes) {
    const double copy = collector["BM_Memcpy/" + std::to_string(size) + "/real_time"];
    for (int replicas : {2, 4}) {
      const double ring =
          collector["BM_AllReduce/" + std::to_string(size) + "/" + std::to_string(replicas) + "/real_time"];
      if (copy > 0 && ring > 0)
        std::printf("%10lld %9d %10.2f %10.2f %7.2f\n", (long long)size, replicas, ring, copy, ring / copy);
    }
  }
  const double copy = collector["BM_Memcpy/16777216/real_time"];
  for (int replicas : {2, 4}) {
    const double ring = collector["BM_AllReduce/16777216/" + std::to_string(replicas) + "/real_time"];
    if (copy > 0 && ring > 0)
      std::printf("FIGURE allreduce_busbw_vs_memcpy_%dr_16MiB %.2f ratio\n", replicas, ring / copy);
  }
  return 0;
}
