// SPDX-License-Identifier: Apache-2.0
// The perf backend apart from its calibration (tests/rtl): its bad
// parameters, its results, the host link's time, contention between
// compute units for an HBM pseudo-channel, and host threads: projections
// that do not depend on the order they ran in, and their meetings.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <future>
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

// A size x size x size product's operands in banks a, b and c and its
// command list, written to the list's host copy (not yet synced), in
// `list_bank`.
struct SquareProduct {
  Buffer a, b, c, list;
};
SquareProduct square_product(Device& device, uint32_t size, uint32_t a_bank, uint32_t b_bank, uint32_t c_bank,
                             uint32_t list_bank) {
  SquareProduct p;
  p.a = device.allocate(size * size * 2, a_bank).value();
  p.b = device.allocate(size * size * 2, b_bank).value();
  p.c = device.allocate(size * size * 4, c_bank).value();
  GemmProblem problem;
  problem.m = problem.n = problem.k = size;
  problem.a = {p.a.address(), size};
  problem.b = {p.b.address(), size};
  problem.c = {p.c.address(), size};
  const auto descriptors = plan_gemm(device.info(), problem).value();
  const auto encoded = encode_command_lists(descriptors, device.info().max_descriptors).at(0);
  p.list = device.allocate(encoded.size(), list_bank).value();
  EXPECT_TRUE(p.list.write(encoded.data(), encoded.size()).ok());
  return p;
}

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
  EXPECT_FALSE(emulated.card_model());
  EXPECT_TRUE(Device::open("perf", 0, options).value().card_model());
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
    const Projection p = device.card_model()->projection();
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
  const double after_one_sync = device.card_model()->projection().link_seconds;
  EXPECT_GT(after_one_sync, 0);
  EXPECT_EQ(device.card_model()->projection().link_bytes, 4096u);
  const uint8_t zeros[8] = {};
  ASSERT_TRUE(buffer.write(zeros, 8, 92).ok());
  ASSERT_TRUE(buffer.sync(Buffer::SyncDirection::kFromDevice, 8, 92).ok());
  EXPECT_GT(device.card_model()->projection().link_seconds, after_one_sync);
  EXPECT_EQ(device.card_model()->projection().link_bytes, 4096u + 8u) << "both ways, the bytes synced";
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

// Two host threads, one per unit, that ask the card for different work at
// the same simulated times (uploads over the one host link, then a launch
// each): whichever thread the machine runs first, the projection is the
// same to the bit, and the tie goes to the thread of the lower unit. A
// model that booked the link in the order the threads came would give the
// first thread the link first.
TEST(Perf, TheProjectionDoesNotDependOnTheOrderThreadsRan) {
  struct Work {
    uint32_t unit;
    std::size_t upload_bytes;
    uint32_t size;  // of a square product
  };
  // Unit 0: a long upload and a short product; unit 1: a short upload and
  // a long product, which ends last when unit 0's upload is ahead of its own.
  const Work works[2] = {{0, 24 << 20, 32}, {1, 4 << 20, 256}};
  auto project = [&](const std::function<void(const std::function<void(uint32_t)>&)>& schedule) {
    DeviceOptions options = perf_options();
    options.compute_units = 2;
    Device device = Device::open("perf", 0, options).value();
    const Projection before = device.card_model()->projection();
    auto run = [&](uint32_t which) {
      const Work& work = works[which];
      const uint32_t bank = 4 * work.unit;
      Buffer upload = device.allocate(work.upload_bytes, bank).value();
      SquareProduct product = square_product(device, work.size, bank, bank + 1, bank + 2, bank + 3);
      EXPECT_TRUE(upload.sync(Buffer::SyncDirection::kToDevice).ok());
      EXPECT_TRUE(product.list.sync(Buffer::SyncDirection::kToDevice).ok());
      systole::Run launch = device.start(work.unit, product.list).value();
      EXPECT_TRUE(launch.wait(std::chrono::seconds(60)).ok());
      EXPECT_GT(launch.counters().busy_cycles, 0u);
    };
    schedule(run);
    return device.card_model()->projection().since(before);
  };
  // One thread after the other, in both orders, and both at once. (Both
  // threads live throughout: a thread is a timeline of its own.)
  auto in_order = [](uint32_t first) {
    return [first](const std::function<void(uint32_t)>& run) {
      std::promise<void> first_done;
      std::shared_future<void> done = first_done.get_future().share();
      std::thread later([&, done] {
        done.wait();
        run(1 - first);
      });
      std::thread earlier([&] {
        run(first);
        first_done.set_value();
      });
      earlier.join();
      later.join();
    };
  };
  auto together = [](const std::function<void(uint32_t)>& run) {
    std::thread zero(run, 0), one(run, 1);
    zero.join();
    one.join();
  };
  const Projection zero_first = project(in_order(0));
  const Projection one_first = project(in_order(1));
  const Projection both = project(together);
  std::printf("unit 0's thread first %.3f us, unit 1's first %.3f us, both at once %.3f us\n",
              zero_first.seconds * 1e6, one_first.seconds * 1e6, both.seconds * 1e6);
  for (const Projection* p : {&one_first, &both}) {
    EXPECT_EQ(p->seconds, zero_first.seconds);
    EXPECT_EQ(p->link_seconds, zero_first.link_seconds);
    EXPECT_EQ(p->launch_seconds, zero_first.launch_seconds);
    EXPECT_EQ(p->busy_cycles, zero_first.busy_cycles);
    EXPECT_EQ(p->hbm_wait_cycles, zero_first.hbm_wait_cycles);
  }
  // Unit 1's 4 MiB waited behind unit 0's 24 MiB: the link's time is more
  // than the two uploads' own.
  const double link = 16 * 8e9 * 128 / 130 / 8 * 0.8;  // Gen3 x16 payload, bytes/s
  EXPECT_GT(zero_first.link_seconds, (28 << 20) / link * 1.5);
}

// Host threads that meet (replicas at an all-reduce) continue from the
// latest of their times: a download asked for after the meeting starts
// when the other thread's upload has ended, though the link carries both
// directions at once. They meet twice with nothing asked between (an
// all-reduce that ends a step, the next step's start): each meeting is
// left once.
TEST(Perf, HostThreadsThatMeetContinueFromTheLatest) {
  const double link = 16 * 8e9 * 128 / 130 / 8 * 0.8;  // Gen3 x16 payload, bytes/s
  const std::size_t up = 24 << 20, down = 4 << 20;
  for (const bool meet : {false, true}) {
    Device device = Device::open("perf", 0, perf_options()).value();
    Buffer upload = device.allocate(up, 0).value(), download = device.allocate(down, 1).value();
    std::thread uploader([&] {
      EXPECT_TRUE(upload.sync(Buffer::SyncDirection::kToDevice).ok());
      for (int i = 0; meet && i < 2; ++i) device.card_model()->meet_host_threads(2);
    });
    std::thread downloader([&] {
      for (int i = 0; meet && i < 2; ++i) device.card_model()->meet_host_threads(2);
      EXPECT_TRUE(download.sync(Buffer::SyncDirection::kFromDevice).ok());
    });
    uploader.join();
    downloader.join();
    const double seconds = device.card_model()->projection().seconds;
    const double expected = meet ? (up + down) / link + 2e-6 : up / link + 1e-6;
    EXPECT_NEAR(seconds, expected, expected * 0.01) << (meet ? "meeting" : "apart");
  }
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
      SquareProduct product = square_product(device, size, bank, bank, bank + 1, 6);
      keep.insert(keep.end(), {product.a, product.b, product.c});
      lists.push_back(product.list);
    }
    // The lists' upload is on the host link; the launches start after it.
    for (Buffer& list : lists) EXPECT_TRUE(list.sync(Buffer::SyncDirection::kToDevice).ok());
    const Projection before = device.card_model()->projection();
    std::vector<systole::Run> runs;
    for (uint32_t u = 0; u < units; ++u) runs.push_back(device.start(u, lists[u]).value());
    for (systole::Run& run : runs) EXPECT_TRUE(run.wait(std::chrono::seconds(60)).ok());
    return device.card_model()->projection().since(before).seconds;
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
