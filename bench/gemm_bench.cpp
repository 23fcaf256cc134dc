// SPDX-License-Identifier: Apache-2.0
// GEMM throughput of the sw_emu device (fast bit-exact path, 128x128 array,
// operands already in device memory, as a board would have them) against
// Eigen's fp32 GEMM, in the same process, on 1 and 2 threads. Prints a ratio
// table and FIGURE lines.
#include <benchmark/benchmark.h>

#include <Eigen/Dense>
#include <cstdio>
#include <random>
#include <string>

#include "collector.h"
#include "systole/driver.h"
#include "systole/gemm_plan.h"
#include "systole/numerics.h"

namespace {

using namespace systole;

constexpr int kSizes[] = {256, 512, 1024, 2048};

void set_flops(benchmark::State& state, double size) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * size * size * size * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Eigen(benchmark::State& state) {
  const int size = int(state.range(0));
  Eigen::setNbThreads(int(state.range(1)));
  const Eigen::MatrixXf a = Eigen::MatrixXf::Random(size, size);
  const Eigen::MatrixXf b = Eigen::MatrixXf::Random(size, size);
  Eigen::MatrixXf c(size, size);
  for (auto _ : state) {
    c.noalias() = a * b;
    benchmark::DoNotOptimize(c.data());
  }
  set_flops(state, size);
}

// A device with a square GEMM's operands uploaded and its command list ready.
struct DeviceGemm {
  Device device;
  Buffer data, commands;

  DeviceGemm(int size, EmuEngine engine, uint32_t threads) {
    DeviceOptions options;
    options.engine = engine;
    options.threads_per_unit = threads;
    device = Device::open("sw_emu", 0, options).value();
    const uint64_t n = uint64_t(size);
    data = device.allocate(n * n * (2 + 2 + 4), 0).value();
    std::mt19937 rng(1);
    std::normal_distribution<float> normal;
    std::vector<uint16_t> operands(2 * n * n);
    for (uint16_t& v : operands) v = numerics::f32_to_bf16(normal(rng));
    check(data.write(operands.data(), operands.size() * 2));
    check(data.sync(Buffer::SyncDirection::kToDevice));
    GemmProblem problem;
    problem.m = problem.n = problem.k = uint32_t(size);
    problem.a = {data.address(), uint32_t(size)};
    problem.b = {data.address() + n * n * 2, uint32_t(size)};
    problem.c = {data.address() + n * n * 4, uint32_t(size)};
    const auto lists =
        encode_command_lists(plan_gemm(device.info(), problem).value(), device.info().max_descriptors);
    commands = device.allocate(lists.at(0).size(), 1).value();
    check(commands.write(lists[0].data(), lists[0].size()));
    check(commands.sync(Buffer::SyncDirection::kToDevice));
  }

  void run() {
    Run run = device.start(0, commands).value();
    check(run.wait(std::chrono::minutes(10)));
  }

  static void check(const Status& status) {
    if (!status.ok()) {
      std::fprintf(stderr, "gemm_bench: %s\n", status.to_string().c_str());
      std::abort();
    }
  }
};

void BM_SwEmu(benchmark::State& state) {
  DeviceGemm gemm(int(state.range(0)), EmuEngine::kFast, uint32_t(state.range(1)));
  gemm.run();  // warm: first-touch page faults of device memory
  for (auto _ : state) gemm.run();
  set_flops(state, double(state.range(0)));
}

void BM_SwEmuHls(benchmark::State& state) {
  DeviceGemm gemm(int(state.range(0)), EmuEngine::kHls, 1);
  for (auto _ : state) gemm.run();
  set_flops(state, double(state.range(0)));
}

void sizes_and_threads(benchmark::internal::Benchmark* b) {
  for (int threads : {1, 2})
    for (int size : kSizes) b->Args({size, threads});
}

BENCHMARK(BM_Eigen)->Apply(sizes_and_threads)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SwEmu)->Apply(sizes_and_threads)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SwEmuHls)->Args({256})->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  bench::Collector collector("GFLOP/s");
  benchmark::RunSpecifiedBenchmarks(&collector);
  benchmark::Shutdown();

  std::printf("\nsw_emu fast path (128x128 array) vs Eigen fp32 GEMM, GFLOP/s\n");
  std::printf("%6s %8s %10s %10s %8s\n", "size", "threads", "sw_emu", "eigen", "ratio");
  auto lookup = [&](const char* name, int size, int threads) {
    return collector[std::string(name) + "/" + std::to_string(size) + "/" + std::to_string(threads) +
                     "/real_time"];
  };
  for (int threads : {1, 2}) {
    for (int size : kSizes) {
      const double ours = lookup("BM_SwEmu", size, threads);
      const double eigen = lookup("BM_Eigen", size, threads);
      if (ours > 0 && eigen > 0)
        std::printf("%6d %8d %10.1f %10.1f %8.2f\n", size, threads, ours, eigen, ours / eigen);
    }
  }
  for (int threads : {1, 2}) {
    const double ours = lookup("BM_SwEmu", 1024, threads);
    const double eigen = lookup("BM_Eigen", 1024, threads);
    if (ours > 0 && eigen > 0) {
      std::printf("FIGURE gemm_sw_emu_vs_eigen_%dt %.2f ratio\n", threads, ours / eigen);
      std::printf("FIGURE gemm_sw_emu_gflops_%dt %.1f GFLOP/s\n", threads, ours);
    }
  }
  if (const double hls = collector["BM_SwEmuHls/256/real_time"]; hls > 0)
    std::printf("FIGURE gemm_hls_kernel_gflops_256 %.2f GFLOP/s\n", hls);
  return 0;
}
