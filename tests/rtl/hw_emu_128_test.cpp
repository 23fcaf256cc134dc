// SPDX-License-Identifier: Apache-2.0
// The full 128x128 kernel (label slow: `ctest --test-dir build -L slow`):
// GEMMs planned by the host runtime run through the Verilated RTL (hw_emu)
// and through the HLS kernel compiled natively (sw_emu, EmuEngine::kHls),
// operands coming from the HBM model; every byte of memory must be equal,
// and equal to tests/reference. One single-tile GEMM (128x128x128, one
// descriptor, the array exactly full) and one that needs every kind of
// tiling: several M blocks, partial N tiles, K longer than the device's
// max_k (accumulate-into-C chains), bias and ReLU, unaligned addresses and
// leading dimensions.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>

#include "common/engines.h"
#include "common/random_workload.h"
#include "systole/driver.h"
#include "systole/gemm_plan.h"
#include "systole/numerics.h"

namespace systole {
namespace {

constexpr uint32_t kSize = 128;

Device open_128(const char* backend) {
  DeviceOptions options;
  options.array_rows = options.array_cols = kSize;
  options.hbm_banks = 4;
  options.bank_bytes = 64 << 20;
  options.engine = EmuEngine::kHls;  // sw_emu runs the HLS kernel itself
  options.threads_per_unit = 1;
  return Device::open(backend, 0, options).value();
}

struct GemmCase {
  uint32_t m, n, k;
  uint32_t pad;  // extra elements per leading dimension
  bool bias_relu;
};

// Lays out A, B, C (fp32, random starting values that the first K block
// overwrites) and the bias in one image, with `pad` extra elements per row
// and every matrix 4 bytes past a beat boundary.
testing::Workload gemm_workload(uint32_t seed, const GemmCase& gemm, const DeviceInfo& info) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  GemmProblem problem;
  problem.m = gemm.m;
  problem.n = gemm.n;
  problem.k = gemm.k;
  problem.a.ld = gemm.k + gemm.pad;
  problem.b.ld = gemm.n + gemm.pad;
  problem.c.ld = gemm.n + gemm.pad;
  problem.bias = problem.relu = gemm.bias_relu;
  uint64_t end = 0;
  auto place = [&](uint64_t bytes) {
    const uint64_t at = (end + 63) / 64 * 64 + 4;
    end = at + bytes;
    return at;
  };
  problem.a.address = place(uint64_t(gemm.m) * problem.a.ld * 2);
  problem.b.address = place(uint64_t(gemm.k) * problem.b.ld * 2);
  problem.c.address = place(uint64_t(gemm.m) * problem.c.ld * 4);
  problem.bias_address = place(uint64_t(gemm.n) * 4);
  end += 64;

  testing::Workload workload;
  workload.memory.resize(end);
  auto put16 = [&](uint64_t at, uint16_t v) { std::memcpy(&workload.memory[at], &v, 2); };
  auto put32 = [&](uint64_t at, uint32_t v) { std::memcpy(&workload.memory[at], &v, 4); };
  for (uint64_t i = 0; i < uint64_t(gemm.m) * problem.a.ld; ++i)
    put16(problem.a.address + 2 * i, numerics::f32_to_bf16(normal(rng)));
  for (uint64_t i = 0; i < uint64_t(gemm.k) * problem.b.ld; ++i)
    put16(problem.b.address + 2 * i, numerics::f32_to_bf16(normal(rng)));
  for (uint64_t i = 0; i < uint64_t(gemm.m) * problem.c.ld; ++i) put32(problem.c.address + 4 * i, rng());
  for (uint32_t i = 0; i < gemm.n; ++i) put32(problem.bias_address + 4 * i, numerics::f32_bits(normal(rng)));
  workload.descriptors = plan_gemm(info, problem).value();
  char line[160];
  std::snprintf(line, sizeof line,
                "seed %u: C[%ux%u] = A[%ux%u] * B[%ux%u], pad %u, bias+relu %d, %zu descriptors", seed,
                gemm.m, gemm.n, gemm.m, gemm.k, gemm.k, gemm.n, gemm.pad, int(gemm.bias_relu),
                workload.descriptors.size());
  workload.description = line;
  return workload;
}

void expect_rtl_equals_hls(uint32_t seed, const GemmCase& gemm, size_t expected_descriptors) {
  Device rtl = open_128("hw_emu");
  Device hls = open_128("sw_emu");
  const testing::Workload workload = gemm_workload(seed, gemm, rtl.info());
  std::printf("%s\n", workload.description.c_str());
  ASSERT_EQ(workload.descriptors.size(), expected_descriptors) << workload.description;
  const auto list = encode_command_lists(workload.rebased(0), 1000).at(0);

  const auto start = std::chrono::steady_clock::now();
  const testing::Outcome from_rtl = testing::run_on_device(rtl, workload.memory, list);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(from_rtl.status.ok()) << from_rtl.status.to_string();
  const testing::Outcome from_hls = testing::run_on_device(hls, workload.memory, list);
  ASSERT_TRUE(from_hls.status.ok()) << from_hls.status.to_string();

  EXPECT_EQ(testing::first_difference(from_hls.memory, from_rtl.memory), "") << workload.description;
  EXPECT_EQ(testing::first_difference(testing::run_reference(workload, kSize).memory, from_rtl.memory), "")
      << workload.description;
  EXPECT_NE(workload.memory, from_rtl.memory) << "the GEMM wrote C";
  EXPECT_EQ(from_rtl.counters.macs, uint64_t(gemm.m) * gemm.n * gemm.k);
  const uint64_t cycles = from_rtl.counters.busy_cycles;
  std::printf("hw_emu 128x128: %llu cycles in %.1f s (%.0f cycles/s), array utilization %.1f%%\n",
              static_cast<unsigned long long>(cycles), seconds, cycles / seconds,
              100.0 * double(from_rtl.counters.macs) / (double(cycles) * kSize * kSize));
}

TEST(HwEmu128, OneTileGemmEqualsTheHlsKernel) {
  expect_rtl_equals_hls(128, {kSize, kSize, kSize, 0, false}, 1);
}

TEST(HwEmu128, TiledGemmEqualsTheHlsKernel) {
  // M: 1024 + 6 (max_m, then a short block); N: 128 + 72 (one partial N
  // tile); K: 1024 + 77 (two K blocks chained through C, the last K tile
  // partial).
  static_assert(spec::ArrayShape{kSize, kSize}.max_m() == 1024);
  expect_rtl_equals_hls(1281, {1030, 200, 1101, 3, true}, 4);
}

}  // namespace
}  // namespace systole
