// SPDX-License-Identifier: Apache-2.0
// Differential tests (label emu): the same random command lists through the
// HLS kernel, the fast path (1 and 2 threads; every instruction set this CPU
// has and both loop orders, and its portable code) and the reference,
// compared byte for byte over the whole memory image (outputs, and
// everything around them that must stay untouched).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <tuple>

#include "common/engines.h"
#include "common/random_workload.h"

namespace systole::testing {
namespace {

using Param = std::tuple<uint32_t /*array size*/, Values, uint32_t /*seed*/>;

// "16x16_extreme_seed3".
std::string case_name(const ::testing::TestParamInfo<Param>& info) {
  const auto [size, values, seed] = info.param;
  return std::to_string(size) + "x" + std::to_string(size) + "_" + values_name(values) + "_seed" +
         std::to_string(seed);
}

class Differential : public ::testing::TestWithParam<Param> {};

TEST_P(Differential, AllModelsAgreeToTheBit) {
  const auto [size, values, seed] = GetParam();
  const spec::ArrayShape shape{size, size};
  WorkloadOptions options;
  options.shape = shape;
  options.values = values;
  options.descriptors = 6;
  const Workload workload = make_workload(seed, options);
  SCOPED_TRACE("seed " + std::to_string(seed) + ", " + std::to_string(size) + "x" + std::to_string(size) +
               ", " + values_name(values) + " values, descriptors:\n" + workload.description);

  const Outcome expected = run_reference(workload, shape.rows);
  const Outcome hls = run_sw_emu(workload, shape, EmuEngine::kHls);
  ASSERT_TRUE(hls.status.ok()) << hls.status.to_string();
  EXPECT_EQ(first_difference(expected.memory, hls.memory), "") << "HLS kernel vs reference";

  for (uint32_t threads : {1u, 2u}) {
    const Outcome fast = run_sw_emu(workload, shape, EmuEngine::kFast, threads);
    ASSERT_TRUE(fast.status.ok()) << fast.status.to_string();
    EXPECT_EQ(first_difference(expected.memory, fast.memory), "")
        << "fast path with " << threads << " threads vs reference";
    // The fast path reports the counters the kernel measures.
    EXPECT_EQ(fast.counters.macs, hls.counters.macs);
    EXPECT_EQ(fast.counters.busy_cycles, hls.counters.busy_cycles);
    EXPECT_EQ(fast.counters.dma_read_bytes, hls.counters.dma_read_bytes);
    EXPECT_EQ(fast.counters.dma_write_bytes, hls.counters.dma_write_bytes);
    EXPECT_EQ(fast.counters.descriptors_done, hls.counters.descriptors_done);
  }
  const Outcome portable =
      run_fast(workload, shape.rows, sw_emu::FastGemmIsa::kPortable, sw_emu::FastGemmOrder::kAuto, 1);
  EXPECT_EQ(first_difference(expected.memory, portable.memory), "") << "portable fast path vs reference";

  uint64_t macs = 0;
  for (const spec::GemmDescriptor& d : workload.descriptors) macs += uint64_t(d.m) * d.n * d.k;
  EXPECT_EQ(hls.counters.macs, macs);
  EXPECT_EQ(hls.counters.descriptors_done, workload.descriptors.size());
}

INSTANTIATE_TEST_SUITE_P(Emu, Differential,
                         ::testing::Combine(::testing::Values(4u, 8u, 16u),
                                            ::testing::Values(Values::kTypical, Values::kCancelling,
                                                              Values::kExtreme, Values::kNearZero),
                                            ::testing::Values(1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u)),
                         case_name);

// The fast path's instruction sets and loop orders, each called directly,
// on products as large as the 128x128 array's (up to 4 x 128 + 3 columns
// and about as many rows: several of the engine's column and row blocks,
// both ways of sharing them among threads, and C's transpose), against the
// reference. The device picks one of them; this checks every one this CPU
// can run, and says which it could not (the engine is x86-64 only).
class FastEngine : public ::testing::TestWithParam<Param> {};

// Every instruction set and order against the reference, on the workload
// of the test's size, values and seed with `descriptors` products of up to
// `max_m` rows and `max_n` columns (0: sizes near the array's).
void check_fast_paths(const Param& param, uint32_t descriptors, uint32_t max_m, uint32_t max_n) {
  const auto [size, values, seed] = param;
  WorkloadOptions options;
  options.shape = spec::ArrayShape{size, size};
  options.values = values;
  options.descriptors = descriptors;
  options.max_m = max_m;
  options.max_n = max_n;
  const Workload workload = make_workload(seed, options);
  SCOPED_TRACE("seed " + std::to_string(seed) + ", " + std::to_string(size) + "x" + std::to_string(size) +
               ", " + values_name(values) + " values, descriptors:\n" + workload.description);
  const Outcome expected = run_reference(workload, size);
  using sw_emu::FastGemmIsa;
  using sw_emu::FastGemmOrder;
  int ran = 0;
  for (FastGemmIsa isa : {FastGemmIsa::kAvx512, FastGemmIsa::kAvx2}) {
    const char* name = isa == FastGemmIsa::kAvx512 ? "AVX-512" : "AVX2";
    if (!sw_emu::fast_gemm_supports(isa)) {
      std::printf("this CPU has no %s: its fast path is not checked here\n", name);
      continue;
    }
    for (FastGemmOrder order : {FastGemmOrder::kDirect, FastGemmOrder::kTransposed})
      for (uint32_t threads : {1u, 2u}) {
        const Outcome fast = run_fast(workload, size, isa, order, threads);
        EXPECT_EQ(first_difference(expected.memory, fast.memory), "")
            << name << (order == FastGemmOrder::kDirect ? ", C" : ", C's transpose") << ", " << threads
            << " threads vs reference";
        ++ran;
      }
  }
  EXPECT_GT(ran, 0) << "no SIMD fast path runs on this CPU";
}

TEST_P(FastEngine, EveryInstructionSetAndOrderAgreesWithTheReference) {
  // Rows past 2 threads' worth of the engine's row blocks at 128.
  check_fast_paths(GetParam(), 4, 4 * std::get<0>(GetParam()) + 30, 0);
}

// C of 1 to 14 columns (the AVX-512 engine computes up to 12 in pairs of
// lanes, 16 rows at a time): odd counts, rows that end inside a block, K
// that ends inside a group of eight.
TEST_P(FastEngine, NarrowProductsAgreeWithTheReference) { check_fast_paths(GetParam(), 6, 3 * 16 + 5, 14); }

// The engine multiplies with FMA only where every product of a pair of
// panels lies in fp32's normal range, by the exponents it scans. Here a
// product underflows after a sum of -2^-126 (multiply, flush to zero, add:
// -2^-126; FMA: -(2^-126 - 2^-130), subnormal, so zero), or overflows after
// -2^127 (multiply then add: Inf; FMA: 2^127), each in a product of its
// own. C of 2 columns (the pair kernel) and of 20 (the 8 x 32 kernel),
// every ISA and order.
TEST(FastEngineProducts, OutsideTheNormalRangeMultiplyThenAdd) {
  auto power = [](int exponent, bool negative = false) {
    return uint16_t((negative ? 0x8000 : 0) | (exponent + 127) << 7);
  };
  struct Case {
    const char* name;
    uint16_t a[3], b[3];  // A's row; B's column 0
    float expected;
  };
  const Case cases[] = {
      {"underflow", {power(-63, true), power(-65), 0}, {power(-63), power(-65), 0}, -std::ldexp(1.0f, -126)},
      {"overflow", {power(64, true), power(64), 0}, {power(63), power(64), 0}, INFINITY},
  };
  for (const Case& test : cases)
    for (uint32_t n : {2u, 20u}) {
      SCOPED_TRACE(std::string(test.name) + ", N = " + std::to_string(n));
      Workload workload;
      spec::GemmDescriptor d{};
      d.opcode = uint8_t(spec::Opcode::kGemm);
      d.m = 1;
      d.n = n;
      d.k = 3;
      d.lda = d.k;
      d.ldb = d.ldc = n;
      std::vector<uint16_t> b(std::size_t(d.k) * n, 0);
      for (uint32_t k = 0; k < d.k; ++k) b[k * n] = test.b[k];
      auto place = [&](const void* values, std::size_t bytes) {
        const uint64_t at = (workload.memory.size() + 63) / 64 * 64;
        workload.memory.resize(at + bytes + 64);
        std::memcpy(workload.memory.data() + at, values, bytes);
        return at;
      };
      d.a_addr = place(test.a, sizeof test.a);
      d.b_addr = place(b.data(), b.size() * sizeof(uint16_t));
      const std::vector<float> c(n, 0.0f);
      d.c_addr = place(c.data(), c.size() * sizeof(float));
      workload.descriptors.push_back(d);
      const Outcome expected = run_reference(workload, 8);
      float c0;
      std::memcpy(&c0, expected.memory.data() + d.c_addr, sizeof c0);
      ASSERT_EQ(c0, test.expected);  // the contract's answer, as the reference gives it
      for (auto isa : {sw_emu::FastGemmIsa::kAvx512, sw_emu::FastGemmIsa::kAvx2}) {
        if (!sw_emu::fast_gemm_supports(isa)) continue;
        for (auto order : {sw_emu::FastGemmOrder::kDirect, sw_emu::FastGemmOrder::kTransposed})
          EXPECT_EQ(first_difference(expected.memory, run_fast(workload, 8, isa, order, 1).memory), "")
              << (isa == sw_emu::FastGemmIsa::kAvx512 ? "AVX-512" : "AVX2")
              << (order == sw_emu::FastGemmOrder::kDirect ? ", C" : ", C's transpose");
      }
    }
}

INSTANTIATE_TEST_SUITE_P(Emu, FastEngine,
                         ::testing::Combine(::testing::Values(8u, 128u),
                                            ::testing::Values(Values::kTypical, Values::kCancelling,
                                                              Values::kExtreme, Values::kNearZero),
                                            ::testing::Values(1u, 2u, 3u)),
                         case_name);

}  // namespace
}  // namespace systole::testing
