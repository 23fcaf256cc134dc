// SPDX-License-Identifier: Apache-2.0
// The sw_emu backend through the public API (label emu): opening, buffers,
// launch-argument checks, timeouts, busy units, several compute units.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <thread>

#include "../../driver/src/bank_allocator.h"
#include "common/engines.h"
#include "common/random_workload.h"
#include "reference/reference.h"
#include "systole/driver.h"
#include "systole/gemm_plan.h"
#include "systole/numerics.h"

namespace systole {
namespace {

using std::chrono::milliseconds;

DeviceOptions small_device(uint32_t size = 8) {
  DeviceOptions options;
  options.array_rows = options.array_cols = size;
  options.hbm_banks = 2;
  options.bank_bytes = 1 << 20;
  return options;
}

TEST(SwEmu, OpenReportsWhatIsWrong) {
  Result<Device> device = Device::open("gpu", 0);
  EXPECT_EQ(device.status().code(), StatusCode::kNotFound);
  EXPECT_NE(device.status().message().find("'gpu'"), std::string::npos);

  DeviceOptions options = small_device();
  options.array_rows = 5;
  device = Device::open("sw_emu", 0, options);
  EXPECT_EQ(device.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(device.status().message().find("5x8"), std::string::npos);

  device = Device::open("sw_emu", 16, small_device());
  EXPECT_EQ(device.status().code(), StatusCode::kNotFound);

  options = small_device();
  options.compute_units = 0;
  EXPECT_EQ(Device::open("sw_emu", 0, options).status().code(), StatusCode::kInvalidArgument);
}

TEST(SwEmu, ReportsItsShapeAndLimits) {
  DeviceOptions options = small_device(16);
  options.compute_units = 3;
  Device device = Device::open("sw_emu", 2, options).value();
  const DeviceInfo& info = device.info();
  EXPECT_EQ(info.backend, "sw_emu");
  EXPECT_EQ(info.shape.rows, 16u);
  EXPECT_EQ(info.max_k, (spec::ArrayShape{16, 16}.max_k()));
  EXPECT_EQ(info.max_m, (spec::ArrayShape{16, 16}.max_m()));
  EXPECT_EQ(info.compute_units, 3u);
  EXPECT_EQ(info.version, spec::kVersion);
  EXPECT_NE(info.name.find("16x16"), std::string::npos);
}

TEST(SwEmu, BuffersCheckTheirRanges) {
  Device device = Device::open("sw_emu", 0, small_device()).value();
  EXPECT_EQ(device.allocate(100, 2).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(device.allocate(0, 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(device.allocate((1 << 20) + 1, 0).status().code(), StatusCode::kUnavailable);

  Buffer buffer = device.allocate(100, 1).value();
  EXPECT_EQ(buffer.bank(), 1u);
  EXPECT_EQ(buffer.address(), 1u << 20);
  uint8_t bytes[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_TRUE(buffer.write(bytes, 8, 92).ok());
  Status status = buffer.write(bytes, 8, 93);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("[93, 101)"), std::string::npos) << status.message();
  EXPECT_EQ(buffer.read(bytes, 1, 100).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(buffer.sync(Buffer::SyncDirection::kToDevice, 10, 95).code(), StatusCode::kInvalidArgument);
}

// Host and device share sw_emu's memory, so a buffer is mapped: its host
// view is device memory, a write is what the device reads, and the syncs
// (still range-checked) move nothing.
TEST(SwEmu, BuffersAreMappedIntoDeviceMemory) {
  Device device = Device::open("sw_emu", 0, small_device()).value();
  Buffer first = device.allocate(4096, 1).value();
  Buffer second = device.allocate(4096, 1).value();
  ASSERT_TRUE(first.mapped());
  ASSERT_NE(first.map(), nullptr);
  EXPECT_EQ(first.map<uint8_t>()[0], 0) << "a new buffer reads as zeros";
  // The two views lie as far apart as the device addresses.
  EXPECT_EQ(second.map<uint8_t>() - first.map<uint8_t>(), std::ptrdiff_t(second.address() - first.address()));
  const uint32_t value = 0xC0FFEE;
  ASSERT_TRUE(first.write(&value, sizeof value, 8).ok());
  uint32_t seen = 0;
  std::memcpy(&seen, first.map<uint8_t>() + 8, sizeof seen);
  EXPECT_EQ(seen, value);
  EXPECT_EQ(first.sync(Buffer::SyncDirection::kToDevice, 8, 4092).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(first.sync(Buffer::SyncDirection::kFromDevice).ok());
  seen = 0;
  ASSERT_TRUE(first.read(&seen, sizeof seen, 8).ok());
  EXPECT_EQ(seen, value);
}

TEST(SwEmu, AllocatorReusesAndCoalescesFreedSpace) {
  detail::BankAllocator allocator(1, 4 * 4096);
  const uint64_t a = allocator.allocate(4096, 0).value();
  const uint64_t b = allocator.allocate(4096, 0).value();
  const uint64_t c = allocator.allocate(8192, 0).value();
  EXPECT_EQ(allocator.allocate(1, 0).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(allocator.release(b), 4096u);
  EXPECT_EQ(allocator.release(a), 4096u);
  EXPECT_EQ(allocator.release(a), 0u) << "double release is ignored";
  EXPECT_EQ(allocator.allocate(8192, 0).value(), a) << "a and b coalesced";
  EXPECT_EQ(allocator.release(c), 8192u);
}

TEST(SwEmu, AReleasedBlockIsScrubbedBeforeAnyoneCanHaveItAgain) {
  // The emulated memory hands a released buffer's pages back to the host
  // (madvise) in the scrub. Were the block free before the scrub ended, a
  // buffer another thread allocated there meanwhile (compute units share
  // banks) would lose its contents: 4-replica training diverged that way.
  detail::BankAllocator allocator(1, 4096);
  const uint64_t block = allocator.allocate(4096, 0).value();
  std::atomic<bool> scrubbed{false};
  bool taken_after_scrub = false;
  std::thread other;
  EXPECT_EQ(allocator.release(block,
                              [&](uint64_t at, uint64_t bytes) {
                                EXPECT_EQ(at, block);
                                EXPECT_EQ(bytes, 4096u);
                                other = std::thread([&] {
                                  const Result<uint64_t> again = allocator.allocate(4096, 0);
                                  taken_after_scrub = again.ok() && scrubbed.load();
                                });
                                // Time for the other thread to take the block, were it free.
                                std::this_thread::sleep_for(milliseconds(50));
                                scrubbed = true;
                              }),
            4096u);
  other.join();
  EXPECT_TRUE(taken_after_scrub);
}

TEST(SwEmu, ACommandListRunningOffDeviceMemoryIsRejected) {
  Device device = Device::open("sw_emu", 0, small_device()).value();
  // Fill bank 1 so that the list buffer is its last 4 KiB.
  Buffer filler = device.allocate((1 << 20) - 4096, 1).value();
  Buffer list = device.allocate(4096, 1).value();
  // 64 KB of descriptors past a 4 KiB buffer.
  const spec::CommandListHeader header = spec::command_list_header(1000);
  ASSERT_TRUE(list.write(&header, sizeof header).ok());
  ASSERT_TRUE(list.sync(Buffer::SyncDirection::kToDevice).ok());
  systole::Run run = device.start(0, list).value();
  const Status status = run.wait(milliseconds(10'000));
  EXPECT_EQ(status.code(), StatusCode::kDeviceError);
  EXPECT_EQ(run.error_code(), spec::ErrorCode::kAddressOutOfRange);
  EXPECT_EQ(run.error_index(), spec::kHeaderErrorIndex);
}

// A 5 x 3 x 7 product's descriptor: A and B at device addresses a and b
// in `data` (their bf16 values drawn from the seeded normal distribution
// and written there), C at device address c.
spec::GemmDescriptor small_product(Buffer& data, uint64_t a, uint64_t b, uint64_t c, uint32_t seed) {
  spec::GemmDescriptor d{};
  d.opcode = uint8_t(spec::Opcode::kGemm);
  d.m = 5;
  d.n = 3;
  d.k = 7;
  d.lda = d.k;
  d.ldb = d.ldc = d.n;
  d.a_addr = a;
  d.b_addr = b;
  d.c_addr = c;
  std::mt19937 rng(seed);
  for (uint32_t i = 0; i < d.m * d.k + d.k * d.n; ++i) {
    const uint16_t value = numerics::f32_to_bf16(std::normal_distribution<float>()(rng));
    const uint64_t at = i < d.m * d.k ? a + 2 * i : b + 2 * (i - d.m * d.k);
    EXPECT_TRUE(data.write(&value, 2, at - data.address()).ok());
  }
  return d;
}

// Runs the records as one list on unit 0; the run, waited on.
systole::Run run_list(Device& device, const std::vector<spec::CommandRecord>& records) {
  const auto lists = encode_command_lists(records, device.info().max_descriptors);
  Buffer list = device.allocate(lists.at(0).size(), 0).value();
  EXPECT_TRUE(list.write(lists[0].data(), lists[0].size()).ok());
  systole::Run run = device.start(0, list).value();
  (void)run.wait(milliseconds(10'000));
  return run;
}

// C (fp32) of a product whose A and B lie in `data`, as the reference
// computes it.
std::vector<float> reference_product(const Buffer& data, spec::GemmDescriptor d, uint32_t rows) {
  std::vector<uint8_t> image(data.size() + uint64_t(d.m) * d.n * 4);
  EXPECT_TRUE(data.read(image.data(), data.size()).ok());
  d.a_addr -= data.address();
  d.b_addr -= data.address();
  d.c_addr = data.size();
  reference::gemm(d, rows, image);
  std::vector<float> c(uint64_t(d.m) * d.n);
  std::memcpy(c.data(), image.data() + data.size(), c.size() * 4);
  return c;
}

// The fast engine's vector loads may read a few bytes past an operand
// (sw_emu::kFastGemmReadSlack); device memory ends in slack, so an A whose
// last value is device memory's last byte is read like any other (without
// the slack, the guard page after it faults).
TEST(SwEmu, AnOperandEndingAtTheEndOfDeviceMemoryIsRead) {
  DeviceOptions options = small_device();
  options.bank_bytes = 4096;
  Device device = Device::open("sw_emu", 0, options).value();
  Buffer data = device.allocate(4096, 1).value();
  const uint64_t end = data.address() + data.size();
  ASSERT_EQ(end, uint64_t(options.hbm_banks) * options.bank_bytes);
  const spec::GemmDescriptor d =
      small_product(data, end - 5 * 7 * 2, data.address(), data.address() + 64, 23);
  ASSERT_EQ(run_list(device, {spec::record_of(d)}).error_code(), spec::ErrorCode::kOk);
  std::vector<float> c(15);
  ASSERT_TRUE(data.read(c.data(), c.size() * 4, 64).ok());
  const std::vector<float> expected = reference_product(data, d, device.info().shape.rows);
  EXPECT_EQ(std::memcmp(c.data(), expected.data(), c.size() * 4), 0) << "seed 23";
}

// Host memory the fast engine reaches (Device::import_host, as an XRT
// buffer made from a user pointer): a product writes its C straight into
// the caller's array, with the reference's bits, and the buffer is mapped.
TEST(SwEmu, TheFastEngineWritesImportedHostMemoryInPlace) {
  Device device = Device::open("sw_emu", 0, small_device()).value();
  Buffer data = device.allocate(4096, 1).value();
  std::vector<float> c(15, -1.0f);
  Buffer imported = device.import_host(c.data(), c.size() * 4).value();
  EXPECT_TRUE(imported.mapped());
  EXPECT_EQ(imported.bank(), Buffer::kHostMemory);
  EXPECT_EQ(imported.map(), c.data());
  const spec::GemmDescriptor d =
      small_product(data, data.address(), data.address() + 128, imported.address(), 41);
  systole::Run run = run_list(device, {spec::record_of(d)});
  ASSERT_EQ(run.error_code(), spec::ErrorCode::kOk);
  const std::vector<float> expected = reference_product(data, d, device.info().shape.rows);
  EXPECT_EQ(std::memcmp(c.data(), expected.data(), c.size() * 4), 0) << "seed 41";
}

// Descriptors that reach past an import's end, into the addresses between
// the banks and host memory, or into an import that has ended, and vector
// descriptors on host memory, end the launch with kAddressOutOfRange at
// their index before anything is written; so does an A that ends at a
// page boundary of host memory (the engine reads two bytes past A). The
// HLS engine reaches no host memory at all.
TEST(SwEmu, DescriptorsOutsideImportedHostMemoryEndTheLaunch) {
  Device device = Device::open("sw_emu", 0, small_device()).value();
  Buffer data = device.allocate(4096, 1).value();
  std::vector<float> c(15, -1.0f), before = c;
  Buffer imported = device.import_host(c.data(), c.size() * 4).value();
  const spec::GemmDescriptor fits =
      small_product(data, data.address(), data.address() + 128, imported.address(), 43);
  auto ends_at = [&](const std::vector<spec::CommandRecord>& records, uint32_t index, const char* what) {
    SCOPED_TRACE(what);
    systole::Run run = run_list(device, records);
    EXPECT_EQ(run.error_code(), spec::ErrorCode::kAddressOutOfRange);
    EXPECT_EQ(run.error_index(), index);
    EXPECT_EQ(std::memcmp(c.data(), before.data(), c.size() * 4), 0) << "something was written";
  };
  spec::GemmDescriptor past = fits;
  past.ldc = past.n + 1;  // the last row runs 4 bytes past the import
  ends_at({spec::record_of(fits), spec::record_of(past)}, 1, "past the import's end");
  spec::GemmDescriptor gap = fits;
  gap.c_addr = uint64_t(small_device().hbm_banks) * small_device().bank_bytes;
  ends_at({spec::record_of(fits), spec::record_of(gap)}, 1, "between the banks and host memory");
  spec::VectorDescriptor scale{};
  scale.opcode = uint8_t(spec::Opcode::kAxpby);
  scale.n = 4;
  scale.x_addr = data.address();
  scale.y_addr = imported.address();
  scale.alpha = scale.beta = 1.0f;
  ends_at({spec::record_of(fits), spec::record_of(scale)}, 1, "a vector descriptor on host memory");

  // A ending at a page boundary of host memory, and then mid-page.
  const std::size_t page = std::size_t(sysconf(_SC_PAGESIZE));
  std::unique_ptr<uint8_t, void (*)(void*)> pages(static_cast<uint8_t*>(std::aligned_alloc(page, page)),
                                                  std::free);
  std::memset(pages.get(), 0, page);
  Buffer host_a = device.import_host(pages.get(), page).value();
  spec::GemmDescriptor a_in_host = fits;
  a_in_host.a_addr = host_a.address() + page - uint64_t(fits.m) * fits.k * 2;
  ends_at({spec::record_of(a_in_host)}, 0, "A at a page boundary");
  a_in_host.a_addr -= 2;
  EXPECT_EQ(run_list(device, {spec::record_of(a_in_host)}).error_code(), spec::ErrorCode::kOk);
  before = c;  // +0s now: A was

  const uint64_t ended = imported.address();
  imported = Buffer();
  spec::GemmDescriptor after = fits;
  after.c_addr = ended;
  ends_at({spec::record_of(after)}, 0, "an import that has ended");

  DeviceOptions hls = small_device();
  hls.engine = EmuEngine::kHls;
  Device kernel = Device::open("sw_emu", 0, hls).value();
  const Result<Buffer> refused = kernel.import_host(c.data(), c.size() * 4);
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(refused.status().message().find("reaches only its own device memory"), std::string::npos)
      << refused.status().message();
  EXPECT_EQ(device.import_host(nullptr, 4).status().code(), StatusCode::kInvalidArgument);
}

// A list of big descriptors on the HLS engine, which takes a while, and the
// buffer its descriptors point into (which must outlive the run).
struct LongRun {
  Buffer data, list;
};

LongRun long_running_list(Device& device) {
  const uint32_t m = 256, n = 2048, k = 128;
  Buffer data = device.allocate(uint64_t(m) * k * 2 + uint64_t(k) * n * 2 + uint64_t(m) * n * 4, 0).value();
  GemmProblem problem;
  problem.m = m;
  problem.n = n;
  problem.k = k;
  problem.a = {data.address(), k};
  problem.b = {data.address() + uint64_t(m) * k * 2, n};
  problem.c = {data.address() + uint64_t(m) * k * 2 + uint64_t(k) * n * 2, n};
  const auto lists =
      encode_command_lists(plan_gemm(device.info(), problem).value(), device.info().max_descriptors);
  Buffer list = device.allocate(lists.at(0).size(), 1).value();
  EXPECT_TRUE(list.write(lists[0].data(), lists[0].size()).ok());
  EXPECT_TRUE(list.sync(Buffer::SyncDirection::kToDevice).ok());
  return {data, list};
}

TEST(SwEmu, WaitTimesOutAndABusyUnitRefusesAStart) {
  DeviceOptions options = small_device(16);
  options.engine = EmuEngine::kHls;
  options.bank_bytes = 16 << 20;
  Device device = Device::open("sw_emu", 0, options).value();
  const LongRun work = long_running_list(device);
  const Buffer& list = work.list;
  systole::Run run = device.start(0, list).value();
  EXPECT_EQ(run.wait(milliseconds(0)).code(), StatusCode::kTimeout);
  Result<systole::Run> second = device.start(0, list);
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(run.wait(milliseconds(120'000)).ok());
  EXPECT_EQ(run.counters().macs, 256ull * 2048 * 128);
  // Idle again: a new run starts.
  Result<systole::Run> third = device.start(0, list);
  ASSERT_TRUE(third.ok()) << third.status().to_string();
  EXPECT_TRUE(third->wait(milliseconds(120'000)).ok());
}

TEST(SwEmu, ComputeUnitsRunConcurrentlyAndCorrectly) {
  const spec::ArrayShape shape{8, 8};
  DeviceOptions options = small_device(8);
  options.compute_units = 2;
  options.bank_bytes = 4 << 20;
  Device device = Device::open("sw_emu", 0, options).value();
  std::vector<testing::Workload> workloads;
  std::vector<Buffer> data, lists;
  testing::WorkloadOptions workload_options;
  workload_options.shape = shape;
  for (uint32_t unit = 0; unit < 2; ++unit) {
    workloads.push_back(testing::make_workload(100 + unit, workload_options));
    data.push_back(device.allocate(workloads[unit].memory.size(), unit).value());
    ASSERT_TRUE(data[unit].write(workloads[unit].memory.data(), workloads[unit].memory.size()).ok());
    ASSERT_TRUE(data[unit].sync(Buffer::SyncDirection::kToDevice).ok());
    const auto list = encode_command_lists(workloads[unit].rebased(data[unit].address()), 100).at(0);
    lists.push_back(device.allocate(list.size(), 0).value());
    ASSERT_TRUE(lists[unit].write(list.data(), list.size()).ok());
    ASSERT_TRUE(lists[unit].sync(Buffer::SyncDirection::kToDevice).ok());
  }
  systole::Run first = device.start(0, lists[0]).value();
  systole::Run second = device.start(1, lists[1]).value();
  ASSERT_TRUE(second.wait(milliseconds(60'000)).ok());
  ASSERT_TRUE(first.wait(milliseconds(60'000)).ok());
  for (uint32_t unit = 0; unit < 2; ++unit) {
    std::vector<uint8_t> memory(workloads[unit].memory.size());
    ASSERT_TRUE(data[unit].sync(Buffer::SyncDirection::kFromDevice).ok());
    ASSERT_TRUE(data[unit].read(memory.data(), memory.size()).ok());
    EXPECT_EQ(testing::first_difference(testing::run_reference(workloads[unit], 8).memory, memory), "")
        << "seed " << 100 + unit << " on unit " << unit;
  }
}

// A unit whose launches were waited on at once runs the next one in the
// waiting thread and does not wake its worker at ap_start. A caller that
// then only polls, or waits on another unit first, must still see its
// launch run (by the worker, woken then).
TEST(SwEmu, ALaunchNobodyWaitsForAtOnceStillRuns) {
  DeviceOptions options = small_device(8);
  options.compute_units = 2;
  options.bank_bytes = 4 << 20;
  Device device = Device::open("sw_emu", 0, options).value();
  testing::WorkloadOptions workload_options;
  workload_options.shape = {8, 8};
  const testing::Workload workload = testing::make_workload(7, workload_options);
  std::vector<Buffer> data, lists;
  for (uint32_t unit = 0; unit < 2; ++unit) {
    data.push_back(device.allocate(workload.memory.size(), unit).value());
    const auto list = encode_command_lists(workload.rebased(data[unit].address()), 100).at(0);
    lists.push_back(device.allocate(list.size(), 0).value());
    ASSERT_TRUE(lists[unit].write(list.data(), list.size()).ok());
  }
  const std::vector<uint8_t> expected = testing::run_reference(workload, 8).memory;
  // Before each launch: the workload's memory (its descriptors may
  // accumulate into C).
  auto reset = [&](uint32_t unit) {
    ASSERT_TRUE(data[unit].write(workload.memory.data(), workload.memory.size()).ok());
  };
  auto check_memory = [&](uint32_t unit) {
    EXPECT_EQ(testing::first_difference(expected,
                                        std::vector<uint8_t>(data[unit].map<uint8_t>(),
                                                             data[unit].map<uint8_t>() + data[unit].size())),
              "")
        << "unit " << unit;
  };
  // Waited on at once, twice: both units are now lazy.
  for (int round = 0; round < 2; ++round)
    for (uint32_t unit = 0; unit < 2; ++unit) {
      reset(unit);
      ASSERT_TRUE(device.start(unit, lists[unit]).value().wait(milliseconds(60'000)).ok());
      check_memory(unit);
    }

  // Only polled.
  reset(0);
  systole::Run polled = device.start(0, lists[0]).value();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  Status status;
  while ((status = polled.wait(milliseconds(0))).code() == StatusCode::kTimeout &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(milliseconds(1));
  ASSERT_TRUE(status.ok()) << status.to_string();
  check_memory(0);

  // Both started, then waited on in turn.
  reset(0);
  reset(1);
  systole::Run first = device.start(0, lists[0]).value();
  systole::Run second = device.start(1, lists[1]).value();
  ASSERT_TRUE(first.wait(milliseconds(60'000)).ok());
  ASSERT_TRUE(second.wait(milliseconds(60'000)).ok());
  check_memory(0);
  check_memory(1);
}

}  // namespace
}  // namespace systole
