// SPDX-License-Identifier: Apache-2.0
// The perf backend apart from its calibration (tests/rtl): its bad
// parameters, its results, the host link's time, and contention between
// compute units for an HBM pseudo-channel.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <random>
#include <thread>

#include "common/engines.h"
#include "common/random_workload.h"
#include "systole/driver.h"
#include "systole/gemm_plan.h"

namespace systole {
namespace {

DeviceOptions perf_options(const std::string& board = "u55c") {
  DeviceOptions options;
  options.array_rows = options.array_cols = 16;
  options.hbm_banks = 8;
  options.bank_bytes = 64 << 20;
  options.threads_per_unit = 1;
  options.perf.board = board;
  return options;
}

Status open_status(const DeviceOptions& options) { return Device::open("perf", 0, options).status(); }

TEST(Perf, BadParametersAreNamed) {
  DeviceOptions options = perf_options("u99");
  Status status = open_status(options);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "perf: unknown board 'u99' (known: u55c, u280, u50, hypothetical, hw_emu)");

  options = perf_options();
  options.perf.pcie_lanes = 3;
  EXPECT_EQ(open_status(options).message(), "perf: pcie_lanes must be 1, 2, 4, 8 or 16, got 3");
  options = perf_options();
  options.perf.pcie_gen = 7;
  EXPECT_EQ(open_status(options).message(), "perf: pcie_gen must be 1 to 5, got 7");
  options = perf_options();
  options.perf.clock_mhz = -5;
  EXPECT_EQ(open_status(options).message(), "perf: clock_mhz must lie in [1, 1000] MHz, got -5.000000");
  options = perf_options();
  options.compute_units = 9;
  EXPECT_EQ(open_status(options).message(),
            "perf: u55c has 32 memory ports, enough for 8 compute units of 4 ports each; 9 were asked for");
  options = perf_options("u50");
  options.array_rows = options.array_cols = 32;
  EXPECT_EQ(open_status(options).message(),
            "perf: a 32x32 array does not fit u50 (largest: 16x16; board 'hypothetical' models a part that "
            "fits 128x128)");
  // Only a modelled board projects.
  options = perf_options();
  Device emulated = Device::open("sw_emu", 0, options).value();
  EXPECT_EQ(emulated.projection().status().code(), StatusCode::kUnavailable);
}

TEST(Perf, ResultsAreTheKernelsBits) {
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    testing::WorkloadOptions options;
    options.shape = {16, 16};
    options.descriptors = 4;
    const testing::Workload workload = testing::make_workload(seed, options);
    const auto list = encode_command_lists(workload.rebased(0), 65536).at(0);
    Device perf = Device::open("perf", 0, perf_options()).value();
    const testing::Outcome modelled = testing::run_on_device(perf, workload.memory, list);
    const testing::Outcome reference = testing::run_reference(workload, 16);
    ASSERT_TRUE(modelled.status.ok()) << modelled.status.to_string();
    EXPECT_EQ(testing::first_difference(reference.memory, modelled.memory), "") << "seed " << seed;
    EXPECT_GT(modelled.counters.busy_cycles, 0u);
    uint64_t macs = 0;
    for (const spec::GemmDescriptor& d : workload.descriptors) macs += uint64_t(d.m) * d.n * d.k;
    EXPECT_EQ(modelled.counters.macs, macs);
  }
}

TEST(Perf, TheHostLinkTakesItsBandwidth) {
  const std::size_t bytes = 64 << 20;
  std::vector<uint8_t> data(bytes, 1);
  for (const uint32_t gen : {3u, 4u}) {
    DeviceOptions options = perf_options();
    options.perf.pcie_gen = gen;
    Device device = Device::open("perf", 0, options).value();
    Buffer buffer = device.allocate(bytes, 0).value();
    ASSERT_TRUE(buffer.write(data.data(), bytes).ok());
    ASSERT_TRUE(buffer.sync(Buffer::SyncDirection::kToDevice).ok());
    const Projection p = device.projection().value();
    // x16 lanes after 128b/130b coding, 80 % of it payload, plus 1 us.
    const double lane = gen == 3 ? 8e9 * 128 / 130 / 8 : 16e9 * 128 / 130 / 8;
    const double expected = bytes / (16 * lane * 0.8) + 1e-6;
    EXPECT_NEAR(p.seconds, expected, expected * 0.01) << "Gen" << gen;
    EXPECT_NEAR(p.link_seconds, p.seconds, 1e-9);
    EXPECT_EQ(p.launches, 0u);
  }
}

// The card model's buffers are not mapped, though sw_emu's memory is under
// them: the host view is a copy, only a sync moves data, and each sync is
// counted on the host link, as on a board.
TEST(Perf, BuffersKeepAHostCopyThatSyncsCross) {
  Device device = Device::open("perf", 0, perf_options()).value();
  Buffer buffer = device.allocate(4096, 0).value();
  EXPECT_FALSE(buffer.mapped());
  const uint8_t bytes[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  ASSERT_TRUE(buffer.write(bytes, 8, 92).ok());
  ASSERT_TRUE(buffer.sync(Buffer::SyncDirection::kToDevice).ok());
  const double after_one_sync = device.projection().value().link_seconds;
  EXPECT_GT(after_one_sync, 0);
  EXPECT_EQ(device.projection().value().link_bytes, 4096u);
  const uint8_t zeros[8] = {};
  ASSERT_TRUE(buffer.write(zeros, 8, 92).ok());
  ASSERT_TRUE(buffer.sync(Buffer::SyncDirection::kFromDevice, 8, 92).ok());
  EXPECT_GT(device.projection().value().link_seconds, after_one_sync);
  EXPECT_EQ(device.projection().value().link_bytes, 4096u + 8u) << "both ways, the bytes synced";
  uint8_t back[8];
  ASSERT_TRUE(buffer.read(back, 8, 92).ok());
  EXPECT_EQ(std::vector<uint8_t>(back, back + 8), std::vector<uint8_t>(bytes, bytes + 8))
      << "the device kept what was synced, not the later write to the copy";
}

// This process's resident memory (/proc/self/statm), in bytes.
std::size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * std::size_t(sysconf(_SC_PAGESIZE));
}

// The host copy takes host memory only where the host writes or syncs: a
// card buffer the host never touches (the gradients and rows of parameters
// kept on the card) costs the host nothing, and it reads as zeros, as the
// device memory does.
TEST(Perf, AHostCopyTakesMemoryOnlyWhereTheHostTouchesIt) {
  Device device = Device::open("perf", 0, perf_options()).value();
  constexpr std::size_t kBytes = std::size_t(48) << 20, kSlack = std::size_t(8) << 20;  // a bank: 64 MiB
  const std::size_t before = resident_bytes();
  auto allocated = device.allocate(kBytes, 0);
  ASSERT_TRUE(allocated.ok()) << allocated.status().to_string();
  Buffer buffer = std::move(allocated).value();
  ASSERT_FALSE(buffer.mapped());
  EXPECT_LT(resident_bytes(), before + kSlack) << "allocating a 48 MiB buffer";
  const uint8_t seven[8] = {7, 7, 7, 7, 7, 7, 7, 7};
  ASSERT_TRUE(buffer.write(seven, 8, kBytes / 2).ok());
  ASSERT_TRUE(buffer.sync(Buffer::SyncDirection::kToDevice, 8, kBytes / 2).ok());
  ASSERT_TRUE(buffer.sync(Buffer::SyncDirection::kFromDevice, 8, kBytes - 8).ok());
  EXPECT_LT(resident_bytes(), before + kSlack) << "after writing and syncing 8 bytes of it";
  uint8_t back[8];
  ASSERT_TRUE(buffer.read(back, 8, kBytes - 8).ok());
  EXPECT_EQ(std::vector<uint8_t>(back, back + 8), std::vector<uint8_t>(8, 0));
  ASSERT_TRUE(buffer.read(back, 8, kBytes / 2).ok());
  EXPECT_EQ(std::vector<uint8_t>(back, back + 8), std::vector<uint8_t>(seven, seven + 8));
}

// Two units each multiply 256x256x256 at the same simulated time: with their
// operands in one bank (one pseudo-channel) they take longer than with an
// operand bank each, and longer than one unit alone.
TEST(Perf, UnitsContendForAPseudoChannel) {
  auto project = [](uint32_t units, bool shared_bank) {
    DeviceOptions options = perf_options();
    options.compute_units = 2;
    Device device = Device::open("perf", 0, options).value();
    const uint32_t size = 256;
    std::vector<Buffer> keep;
    std::vector<Buffer> lists;
    for (uint32_t u = 0; u < units; ++u) {
      const uint32_t bank = shared_bank ? 0 : 2 * u;
      Buffer a = device.allocate(size * size * 2, bank).value();
      Buffer b = device.allocate(size * size * 2, bank).value();
      Buffer c = device.allocate(size * size * 4, bank + 1).value();
      GemmProblem problem;
      problem.m = problem.n = problem.k = size;
      problem.a = {a.address(), size};
      problem.b = {b.address(), size};
      problem.c = {c.address(), size};
      const auto descriptors = plan_gemm(device.info(), problem).value();
      const auto encoded = encode_command_lists(descriptors, device.info().max_descriptors).at(0);
      Buffer list = device.allocate(encoded.size(), 6).value();
      EXPECT_TRUE(list.write(encoded.data(), encoded.size()).ok());
      keep.insert(keep.end(), {a, b, c});
      lists.push_back(list);
    }
    // The lists' upload is on the host link; the launches start after it.
    for (Buffer& list : lists) EXPECT_TRUE(list.sync(Buffer::SyncDirection::kToDevice).ok());
    const Projection before = device.projection().value();
    std::vector<systole::Run> runs;
    for (uint32_t u = 0; u < units; ++u) runs.push_back(device.start(u, lists[u]).value());
    for (systole::Run& run : runs) EXPECT_TRUE(run.wait(std::chrono::seconds(60)).ok());
    return device.projection().value().since(before).seconds;
  };
  const double alone = project(1, false);
  const double apart = project(2, false);
  const double shared = project(2, true);
  std::printf("one unit %.1f us; two units, own banks %.1f us; two units, one bank %.1f us\n", alone * 1e6,
              apart * 1e6, shared * 1e6);
  EXPECT_NEAR(apart, alone, alone * 0.02) << "separate pseudo-channels do not contend";
  EXPECT_GT(shared, apart * 1.05) << "one pseudo-channel is shared";
}

}  // namespace
}  // namespace systole
