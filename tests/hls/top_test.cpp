// SPDX-License-Identifier: Apache-2.0
// The Vitis top function, built here with an 8x8 array (label emu): random
// command lists through systole_top's ports and result outputs, against the
// reference.
#include <gtest/gtest.h>

#include <cstring>

#include "common/engines.h"
#include "common/random_workload.h"
#include "systole/gemm_plan.h"
#include "systole_kernel.h"

extern "C" void systole_top(const systole::hls_kernel::Beat* cmd, const systole::hls_kernel::Beat* a0,
                            const systole::hls_kernel::Beat* a1, const systole::hls_kernel::Beat* a2,
                            const systole::hls_kernel::Beat* a3, const systole::hls_kernel::Beat* b0,
                            const systole::hls_kernel::Beat* b1, systole::hls_kernel::Beat* c0,
                            systole::hls_kernel::Beat* c1, systole::hls_kernel::Beat* c2,
                            systole::hls_kernel::Beat* c3, uint64_t mem_bytes, uint32_t* status,
                            uint32_t* error_index, uint32_t* descriptors_done, uint64_t* busy_cycles,
                            uint64_t* macs, uint64_t* dma_read_bytes, uint64_t* dma_write_bytes,
                            uint64_t* stall_cycles, uint32_t* id, uint32_t* version, uint32_t* array_rows,
                            uint32_t* array_cols, uint32_t* max_m, uint32_t* max_n, uint32_t* max_k,
                            uint32_t* beat_bytes, uint32_t* max_descriptors, uint32_t* features);

namespace systole {
namespace {

using hls_kernel::Beat;

TEST(HlsTop, RunsCommandListsThroughItsPorts) {
  static_assert(SYSTOLE_ROWS == 8 && SYSTOLE_COLS == 8, "built for 8x8");
  for (uint32_t seed : {1u, 2u, 3u}) {
    testing::WorkloadOptions options;
    options.shape = {8, 8};
    const testing::Workload workload = testing::make_workload(seed, options);
    const auto list = encode_command_lists(workload.rebased(0), 100).at(0);
    std::vector<Beat> memory((workload.memory.size() + 63) / 64);
    std::memcpy(memory.data(), workload.memory.data(), workload.memory.size());
    std::vector<Beat> commands((list.size() + 63) / 64);
    std::memcpy(commands.data(), list.data(), list.size());

    uint32_t status = 99, error_index = 99, done = 0;
    uint64_t busy = 0, macs = 0, read = 0, written = 0, stalls = 1;
    uint32_t id[10] = {};           // the identification outputs, in kKernelArgs order
    Beat* const m = memory.data();  // every operand port at address 0
    systole_top(commands.data(), m, m, m, m, m, m, m, m, m, m, memory.size() * 64, &status, &error_index,
                &done, &busy, &macs, &read, &written, &stalls, &id[0], &id[1], &id[2], &id[3], &id[4], &id[5],
                &id[6], &id[7], &id[8], &id[9]);
    constexpr spec::ArrayShape shape{8, 8};
    const uint32_t expected_id[10] = {spec::kDeviceId,
                                      spec::kVersion,
                                      8,
                                      8,
                                      shape.max_m(),
                                      shape.max_n(),
                                      shape.max_k(),
                                      spec::kBeatBytes,
                                      shape.max_descriptors(),
                                      spec::feature::kVectorEngine};
    for (int i = 0; i < 10; ++i) EXPECT_EQ(id[i], expected_id[i]) << "identification output " << i;
    EXPECT_EQ(status, 0u) << "seed " << seed;
    EXPECT_EQ(done, workload.descriptors.size());
    EXPECT_GT(busy, 0u);
    EXPECT_GT(read, 0u);
    EXPECT_GT(written, 0u);
    EXPECT_EQ(stalls, 0u);
    std::vector<uint8_t> result(workload.memory.size());
    std::memcpy(result.data(), memory.data(), result.size());
    EXPECT_EQ(testing::first_difference(testing::run_reference(workload, 8).memory, result), "")
        << "seed " << seed << "\n"
        << workload.description;
  }
}

}  // namespace
}  // namespace systole
