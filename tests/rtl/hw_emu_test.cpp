// SPDX-License-Identifier: Apache-2.0
// The hw_emu backend (label rtl): the Verilated RTL kernel behind the same
// driver API as sw_emu. Random command lists on 4x4, 8x8, 16x16 (and
// 32x32 where the build has it) equal the reference byte for byte; two compute units run side by side;
// bad descriptors and waits behave as on sw_emu; training steps leave the
// same weights, to the bit, as sw_emu, and with the parameters kept on the
// card (the optimizer and the replicas' reduction on the RTL's vector
// engine) the same as with them on the host.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <thread>

#include "common/engines.h"
#include "common/random_workload.h"
#include "systole/driver.h"
#include "systole/gemm_plan.h"
#include "systole/trainer.h"

namespace systole {
namespace {

// A size x size device with 4 banks of 16 MiB (bank 1 starts at 16 MiB).
DeviceOptions hw_emu_options(uint32_t size) {
  DeviceOptions options;
  options.array_rows = options.array_cols = size;
  options.hbm_banks = 4;
  options.bank_bytes = 16 << 20;
  return options;
}

Device open_hw_emu(uint32_t size, uint32_t units = 1, const char* backend = "hw_emu") {
  DeviceOptions options = hw_emu_options(size);
  options.compute_units = units;
  options.engine = EmuEngine::kFast;
  options.threads_per_unit = 1;
  return Device::open(backend, 0, options).value();
}

class HwEmuDifferential : public ::testing::TestWithParam<uint32_t> {};

TEST_P(HwEmuDifferential, CommandListsMatchTheReference) {
  const uint32_t size = GetParam();
  Device device = open_hw_emu(size);
  EXPECT_EQ(device.info().shape.rows, size);
  EXPECT_EQ(device.info().max_k, (spec::ArrayShape{size, size}.max_k()));
  EXPECT_TRUE(device.info().has_vector_engine()) << "the RTL kernel has the vector engine";
  for (uint32_t seed = 1; seed <= 4; ++seed) {
    for (testing::Values values :
         {testing::Values::kTypical, testing::Values::kExtreme, testing::Values::kNearZero}) {
      testing::WorkloadOptions options;
      options.shape = {size, size};
      options.descriptors = 3;
      // Seed 4: blocks up to the device's max_m, so that the engines overlap
      // for whole N tiles (init and write-back beside a streaming bank).
      options.max_m = seed == 4 ? spec::ArrayShape{size, size}.max_m() : 12;
      options.values = values;
      const testing::Workload workload = testing::make_workload(seed, options);
      const auto list = encode_command_lists(workload.rebased(0), 100).at(0);
      const testing::Outcome outcome = testing::run_on_device(device, workload.memory, list);
      SCOPED_TRACE("seed " + std::to_string(seed) + ", " + std::to_string(size) + "x" + std::to_string(size) +
                   ", " + testing::values_name(values) + "\n" + workload.description);
      ASSERT_TRUE(outcome.status.ok()) << outcome.status.to_string();
      EXPECT_EQ(testing::first_difference(testing::run_reference(workload, size).memory, outcome.memory), "");
      uint64_t macs = 0;
      for (const auto& d : workload.descriptors) macs += uint64_t(d.m) * d.n * d.k;
      EXPECT_EQ(outcome.counters.macs, macs);
      EXPECT_EQ(outcome.counters.descriptors_done, workload.descriptors.size());
      EXPECT_GT(outcome.counters.busy_cycles, 0u) << "hw_emu measures cycles";
      // The RTL moves the beats the HLS kernel moves, whatever overlaps.
      const testing::Outcome hls = testing::run_sw_emu(workload, {size, size}, EmuEngine::kHls);
      EXPECT_EQ(outcome.counters.dma_read_bytes, hls.counters.dma_read_bytes);
      EXPECT_EQ(outcome.counters.dma_write_bytes, hls.counters.dma_write_bytes);
    }
  }
}

// Every size the build verilated (16x16 and less, and with
// SYSTOLE_HW_EMU_ALL_SIZES 32x32 and 128x128 too).
INSTANTIATE_TEST_SUITE_P(Rtl, HwEmuDifferential, ::testing::Values(SYSTOLE_HW_EMU_TEST_SIZES),
                         [](const auto& info) {
                           return std::to_string(info.param) + "x" + std::to_string(info.param);
                         });

TEST(HwEmu, BadDescriptorsAndTimeoutsBehaveAsOnSwEmu) {
  Device device = open_hw_emu(4);
  testing::WorkloadOptions options;
  options.shape = {4, 4};
  options.descriptors = 3;
  options.max_m = 6;
  const testing::Workload workload = testing::make_workload(21, options);
  std::vector<spec::GemmDescriptor> descriptors = workload.rebased(0);
  descriptors[1].opcode = 10;  // no such opcode
  const testing::Outcome bad =
      testing::run_on_device(device, workload.memory, encode_command_lists(descriptors, 100).at(0));
  EXPECT_EQ(bad.status.code(), StatusCode::kDeviceError);
  EXPECT_EQ(bad.error, spec::ErrorCode::kBadOpcode);
  EXPECT_EQ(bad.error_index, 1u);
  EXPECT_EQ(testing::first_difference(workload.memory, bad.memory), "") << "nothing written";

  DeviceOptions unbuilt = hw_emu_options(64);
  const Status no_build = Device::open("hw_emu", 0, unbuilt).status();
  EXPECT_EQ(no_build.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(no_build.message().find("no 64x64 build (built: 4x4 8x8 16x16"), std::string::npos)
      << no_build.to_string();
  // A size hw/spec lists that this build did not verilate says how to get it.
  if (std::string(SYSTOLE_HW_EMU_BUILT).find("128") == std::string::npos) {
    const Status unverilated = Device::open("hw_emu", 0, hw_emu_options(128)).status();
    EXPECT_NE(unverilated.message().find("-DSYSTOLE_HW_EMU_ALL_SIZES=ON"), std::string::npos)
        << unverilated.to_string();
  }
  DeviceOptions none = hw_emu_options(4);
  none.compute_units = 0;
  EXPECT_EQ(Device::open("hw_emu", 0, none).status().code(), StatusCode::kInvalidArgument);
}

// Two compute units: two Verilated kernels over one device memory, started
// together and waited on from two threads (as two replicas are), each
// with its own registers, counters and results.
TEST(HwEmu, ComputeUnitsRunSideBySideOverOneMemory) {
  DeviceOptions options = hw_emu_options(8);
  options.compute_units = 2;
  Device device = Device::open("hw_emu", 0, options).value();
  ASSERT_EQ(device.info().compute_units, 2u);
  testing::WorkloadOptions workload_options;
  workload_options.shape = {8, 8};
  workload_options.descriptors = 3;
  workload_options.max_m = 12;
  struct Job {
    testing::Workload workload;
    Buffer data, commands;
    std::vector<uint8_t> result;
    Status status;
    spec::PerfCounters counters;
  };
  std::vector<Job> jobs;
  for (uint32_t unit = 0; unit < 2; ++unit) {
    Job job;
    job.workload = testing::make_workload(41 + unit, workload_options);        // seeds 41, 42
    job.data = device.allocate(job.workload.memory.size(), 2 * unit).value();  // banks 0 and 2
    const auto list = encode_command_lists(job.workload.rebased(job.data.address()), 100).at(0);
    job.commands = device.allocate(list.size(), 2 * unit + 1).value();
    ASSERT_TRUE(job.data.write(job.workload.memory.data(), job.workload.memory.size()).ok());
    ASSERT_TRUE(job.data.sync(Buffer::SyncDirection::kToDevice).ok());
    ASSERT_TRUE(job.commands.write(list.data(), list.size()).ok());
    ASSERT_TRUE(job.commands.sync(Buffer::SyncDirection::kToDevice).ok());
    jobs.push_back(std::move(job));
  }
  std::vector<systole::Run> runs;
  for (uint32_t unit = 0; unit < 2; ++unit) runs.push_back(device.start(unit, jobs[unit].commands).value());
  std::vector<std::thread> waiters;
  for (uint32_t unit = 0; unit < 2; ++unit)
    waiters.emplace_back([&, unit] {
      jobs[unit].status = runs[unit].wait(std::chrono::seconds(60));
      jobs[unit].counters = runs[unit].counters();
    });
  for (std::thread& waiter : waiters) waiter.join();
  for (uint32_t unit = 0; unit < 2; ++unit) {
    Job& job = jobs[unit];
    SCOPED_TRACE("unit " + std::to_string(unit) + ", seed " + std::to_string(41 + unit) + "\n" +
                 job.workload.description);
    ASSERT_TRUE(job.status.ok()) << job.status.to_string();
    job.result.resize(job.workload.memory.size());
    ASSERT_TRUE(job.data.sync(Buffer::SyncDirection::kFromDevice).ok());
    ASSERT_TRUE(job.data.read(job.result.data(), job.result.size()).ok());
    EXPECT_EQ(testing::first_difference(testing::run_reference(job.workload, 8).memory, job.result), "");
    uint64_t macs = 0;
    for (const auto& d : job.workload.descriptors) macs += uint64_t(d.m) * d.n * d.k;
    EXPECT_EQ(job.counters.macs, macs) << "each unit counts its own work";
  }
}

TEST(HwEmu, RandomBackPressureChangesTheTimingNotTheBits) {
  testing::WorkloadOptions options;
  options.shape = {8, 8};
  options.descriptors = 3;
  options.max_m = 12;
  const testing::Workload workload = testing::make_workload(31, options);
  const auto list = encode_command_lists(workload.rebased(0), 100).at(0);
  DeviceOptions device_options = hw_emu_options(8);
  Device steady = Device::open("hw_emu", 0, device_options).value();
  device_options.hw_emu.arready_probability = 0.4;
  device_options.hw_emu.rvalid_probability = 0.5;
  device_options.hw_emu.seed = 7;
  Device jittery = Device::open("hw_emu", 0, device_options).value();
  const testing::Outcome fast = testing::run_on_device(steady, workload.memory, list);
  const testing::Outcome slow = testing::run_on_device(jittery, workload.memory, list);
  ASSERT_TRUE(fast.status.ok() && slow.status.ok()) << fast.status.to_string() << slow.status.to_string();
  EXPECT_EQ(testing::first_difference(testing::run_reference(workload, 8).memory, slow.memory), "")
      << "seed 31\n"
      << workload.description;
  EXPECT_GT(slow.counters.busy_cycles, fast.counters.busy_cycles) << "back-pressure costs cycles";

  device_options.hw_emu.rvalid_probability = 0;
  EXPECT_EQ(Device::open("hw_emu", 0, device_options).status().code(), StatusCode::kInvalidArgument);
}

TEST(HwEmu, AHungMemoryEndsInTheDriversTimeout) {
  // The operands (bank 0) never answer; the command list (bank 1) does, so
  // the kernel validates the list, starts the first descriptor and hangs.
  testing::WorkloadOptions options;
  options.shape = {4, 4};
  options.descriptors = 2;
  const testing::Workload workload = testing::make_workload(32, options);
  const auto list = encode_command_lists(workload.rebased(0), 100).at(0);
  DeviceOptions device_options = hw_emu_options(4);
  device_options.hw_emu.stall_begin = 0;
  device_options.hw_emu.stall_end = device_options.bank_bytes;
  Device device = Device::open("hw_emu", 0, device_options).value();
  Buffer data = device.allocate(workload.memory.size(), 0).value();
  Buffer commands = device.allocate(list.size(), 1).value();
  ASSERT_TRUE(data.write(workload.memory.data(), workload.memory.size()).ok());
  ASSERT_TRUE(data.sync(Buffer::SyncDirection::kToDevice).ok());
  ASSERT_TRUE(commands.write(list.data(), list.size()).ok());
  ASSERT_TRUE(commands.sync(Buffer::SyncDirection::kToDevice).ok());
  systole::Run run = device.start(0, commands).value();
  const auto start = std::chrono::steady_clock::now();
  const Status status = run.wait(std::chrono::milliseconds(300));
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(status.code(), StatusCode::kTimeout) << status.to_string();
  EXPECT_EQ(status.message(), "compute unit 0 not done after 300 ms");
  EXPECT_LT(waited, std::chrono::seconds(5)) << "the wait is bounded by its timeout";
  EXPECT_EQ(run.wait(std::chrono::milliseconds(50)).code(), StatusCode::kTimeout) << "still hung";
  EXPECT_EQ(device.start(0, commands).status().code(), StatusCode::kUnavailable)
      << "a busy unit takes no new launch";
}

TEST(HwEmu, WritesAnFstWaveformWhenAsked) {
  const std::string path = ::testing::TempDir() + "systole_hw_emu_test.fst";
  std::remove(path.c_str());
  {
    DeviceOptions options = hw_emu_options(4);
    options.hw_emu.trace_fst = path;
    Device device = Device::open("hw_emu", 0, options).value();
    testing::WorkloadOptions workload_options;
    workload_options.shape = {4, 4};
    workload_options.descriptors = 1;
    const testing::Workload workload = testing::make_workload(33, workload_options);
    const testing::Outcome outcome =
        testing::run_on_device(device, workload.memory, encode_command_lists(workload.rebased(0), 100).at(0));
    ASSERT_TRUE(outcome.status.ok()) << outcome.status.to_string();
  }  // closing the device closes the waveform
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  ASSERT_TRUE(file.good()) << path;
  EXPECT_GT(file.tellg(), 1000) << "a waveform of a whole launch";
  file.seekg(0);
  EXPECT_EQ(file.get(), 0) << "FST files start with a header block (type 0)";
  std::remove(path.c_str());

  DeviceOptions unwritable = hw_emu_options(4);
  unwritable.hw_emu.trace_fst = "/nonexistent/dir/wave.fst";
  const Status status = Device::open("hw_emu", 0, unwritable).status();
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(status.message(), "hw_emu: trace_fst: cannot open /nonexistent/dir/wave.fst");
}

// Training on the RTL: the same training steps of `model` (20 inputs, 3
// classes) on the RTL with `run`'s placement and replicas (one per compute
// unit) and on sw_emu with the parameters on the host, same bits; every
// parameter tensor moved, and with `loss_falls` the fourth batch's loss is
// below the first's.
struct RtlRun {
  Placement placement = Placement::kHost;
  uint32_t units = 1;
  std::string optimizer = "adam";
  bool nesterov = false;
};

void expect_rtl_trains_like_sw_emu(const ModelSpec& model, uint32_t seed, bool loss_falls, RtlRun run = {}) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  TrainerConfig config;
  const uint32_t inputs = 20;
  config.model = model;
  config.global_batch = 16;
  config.optimizer.learning_rate = 1e-2f;
  config.optimizer.name = run.optimizer;
  config.optimizer.nesterov = run.nesterov;
  Batch batch;
  batch.size = 16;
  std::vector<Batch> batches;
  for (int step = 0; step < 4; ++step) {
    batch.values.clear();
    batch.labels.clear();
    for (uint32_t e = 0; e < batch.size; ++e) {
      float score = 0;
      for (uint32_t f = 0; f < inputs; ++f) {
        batch.values.push_back(uniform(rng));
        score += batch.values.back() * (f % 3 == 0 ? 1.0f : -0.5f);
      }
      batch.labels.push_back(float(score > 0 ? (score > 2 ? 2 : 1) : 0));
    }
    batches.push_back(batch);
  }
  const std::vector<float> initial = Model::build(model, config.seed).value()->parameters().trainable();
  auto train = [&](Device device, Placement placement, uint32_t units) {
    TrainerConfig placed = config;
    placed.placement = placement;
    std::vector<uint32_t> replicas(units);
    for (uint32_t u = 0; u < units; ++u) replicas[u] = u;
    auto trainer = Trainer::create(device, replicas, placed).value();
    EXPECT_TRUE(trainer->notices().empty()) << trainer->notices().front();
    std::vector<double> losses;
    for (const Batch& b : batches) {
      auto result = trainer->step(b);
      EXPECT_TRUE(result.ok()) << result.status().to_string();
      losses.push_back(result->loss_sum);
    }
    return std::make_pair(trainer->parameters(), losses);
  };
  const auto [rtl, rtl_losses] = train(open_hw_emu(16, run.units), run.placement, run.units);
  const auto [emu, emu_losses] = train(open_hw_emu(16, run.units, "sw_emu"), Placement::kHost, run.units);
  ASSERT_EQ(rtl.trainable().size(), emu.trainable().size());
  EXPECT_EQ(
      std::memcmp(rtl.trainable().data(), emu.trainable().data(), rtl.trainable().size() * sizeof(float)), 0)
      << "seed " << seed;
  EXPECT_EQ(rtl_losses, emu_losses);
  for (const ParameterStore::Entry& entry : rtl.entries()) {
    if (entry.region != Region::kTrainable) continue;
    const float* before = initial.data() + entry.offset;
    const float* after = rtl.trainable().data() + entry.offset;
    EXPECT_NE(std::memcmp(before, after, entry.size * sizeof(float)), 0) << entry.name << " did not train";
  }
  if (loss_falls) {
    EXPECT_LT(rtl_losses.back(), rtl_losses.front()) << "the loss falls";
  }
}

TEST(HwEmu, TrainingStepsMatchSwEmuToTheBit) {
  expect_rtl_trains_like_sw_emu(dense_stack(20, {12}, 3), 23, /*loss_falls=*/true);
}

// The done-when of keeping the model on the card: on two RTL compute units
// the parameters, gradients and Adam's slots live in device memory, the
// units' gradients are summed and Adam's step taken by the RTL's vector
// engine, and the weights are those of the same replicas on the host, to
// the bit.
// Nesterov SGD, whose fused step is another opcode, likewise.
TEST(HwEmu, TrainingWithTheModelOnTheCardMatchesTheHostToTheBit) {
  expect_rtl_trains_like_sw_emu(dense_stack(20, {12}, 3), 25, /*loss_falls=*/true,
                                {Placement::kDevice, 2, "adam", false});
  expect_rtl_trains_like_sw_emu(dense_stack(20, {12}, 3), 26, /*loss_falls=*/false,
                                {Placement::kDevice, 1, "sgd", true});
}

// A tiny Transformer block: its projections, every head's Q K^T and P V
// (causal) and the feed-forward products on the RTL.
TEST(HwEmu, TransformerStepsMatchSwEmuToTheBit) {
  ModelSpec block = dense_stack(20, {}, 3);
  block.layers = {{"reshape", {{"target_shape", "[4, 5]"}}},
                  {"dense", {{"name", "tokens"}, {"units", "8"}}},
                  {"multi_head_attention", {{"name", "attention"}, {"num_heads", "2"}, {"causal", "true"}}},
                  {"add", {{"inputs", "[tokens, attention]"}}},
                  {"layer_normalization", {}},
                  {"global_average_pooling1d", {}},
                  {"dense", {{"units", "3"}}}};
  expect_rtl_trains_like_sw_emu(block, 24, /*loss_falls=*/false);  // four batches are too few to tell
}

}  // namespace
}  // namespace systole
