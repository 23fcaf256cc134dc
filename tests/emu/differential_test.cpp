// SPDX-License-Identifier: Apache-2.0
// Differential tests (label emu): the same random command lists through the
// HLS kernel, the fast path (1 and 2 threads), the fast path's portable code
// and the reference, compared byte for byte over the whole memory image
// (outputs, and everything around them that must stay untouched).
#include <gtest/gtest.h>

#include <tuple>

#include "common/engines.h"
#include "common/random_workload.h"

namespace systole::testing {
namespace {

using Param = std::tuple<uint32_t /*array size*/, Values, uint32_t /*seed*/>;

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
  const Outcome portable = run_portable(workload, shape.rows);
  EXPECT_EQ(first_difference(expected.memory, portable.memory), "") << "portable fast path vs reference";

  uint64_t macs = 0;
  for (const spec::GemmDescriptor& d : workload.descriptors) macs += uint64_t(d.m) * d.n * d.k;
  EXPECT_EQ(hls.counters.macs, macs);
  EXPECT_EQ(hls.counters.descriptors_done, workload.descriptors.size());
}

INSTANTIATE_TEST_SUITE_P(
    Emu, Differential,
    ::testing::Combine(::testing::Values(4u, 8u, 16u),
                       ::testing::Values(Values::kTypical, Values::kCancelling, Values::kExtreme),
                       ::testing::Values(1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u)),
    [](const ::testing::TestParamInfo<Param>& info) {
      return std::to_string(std::get<0>(info.param)) + "x" + std::to_string(std::get<0>(info.param)) + "_" +
             values_name(std::get<1>(info.param)) + "_seed" + std::to_string(std::get<2>(info.param));
    });

}  // namespace
}  // namespace systole::testing
