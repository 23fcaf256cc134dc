// SPDX-License-Identifier: Apache-2.0
// The perf backend's card model against the RTL it models: the same command
// lists through hw_emu (the Verilated kernel) and through perf on the
// "hw_emu" board (the co-simulation's memory), and the kernel cycles each
// counts. The contract is 5 %; each case prints its error, and when the
// RTL's controller changes and the model does not, this test tells.
// Random command lists (awkward shapes, unaligned leading dimensions, every
// flag), tiled GEMMs of awkward sizes, lists of the vector engine's opcodes
// (whose bus bytes must also agree), and training steps of an MLP with its
// parameters on the host and on the card. With SYSTOLE_CALIBRATE_128 the
// 128x128 kernel (label slow).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

#include "../../driver/src/backend.h"
#include "common/engines.h"
#include "common/random_workload.h"
#include "common/vector_workload.h"
#include "systole/driver.h"
#include "systole/gemm_plan.h"
#include "systole/model.h"
#include "systole/trainer.h"

namespace systole {
namespace {

constexpr double kContract = 0.05;

// Forwards to a backend and sums the kernel's counters of every launch it
// waited for (the RTL's own busy and stall counts).
class CountingBackend final : public detail::ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  bool wait_done(uint32_t unit, std::chrono::milliseconds timeout) override {
    if (!inner().wait_done(unit, timeout)) return false;
    busy_cycles += detail::read_register64(inner(), unit, spec::reg::kBusyCyclesLo);
    stall_cycles += detail::read_register64(inner(), unit, spec::reg::kStallCyclesLo);
    read_bytes += detail::read_register64(inner(), unit, spec::reg::kDmaReadBytesLo);
    write_bytes += detail::read_register64(inner(), unit, spec::reg::kDmaWriteBytesLo);
    ++launches;
    return true;
  }

  void reset() { busy_cycles = stall_cycles = read_bytes = write_bytes = launches = 0; }
  uint64_t busy_cycles = 0, stall_cycles = 0, read_bytes = 0, write_bytes = 0, launches = 0;
};

DeviceOptions options_for(uint32_t size) {
  DeviceOptions options;
  options.array_rows = options.array_cols = size;
  options.hbm_banks = 4;
  options.bank_bytes = 16 << 20;
  options.threads_per_unit = 1;
  options.perf.board = "hw_emu";
  return options;
}

// A device of `backend` whose launches are counted.
std::pair<Device, std::shared_ptr<CountingBackend>> open_counted(const std::string& backend, uint32_t size) {
  const DeviceOptions options = options_for(size);
  auto inner = backend == "perf" ? detail::open_perf(0, options) : detail::open_hw_emu(0, options);
  EXPECT_TRUE(inner.ok()) << inner.status().to_string();
  auto counting = std::make_shared<CountingBackend>(std::move(inner).value());
  return {detail::attach_device(counting, backend, 0).value(), counting};
}

// Prints and checks one case: the model's kernel cycles against the RTL's.
void compare(const std::string& what, const CountingBackend& rtl, const CountingBackend& model) {
  ASSERT_GT(rtl.busy_cycles, 0u) << what;
  ASSERT_EQ(rtl.launches, model.launches) << what;
  const double error = double(model.busy_cycles) / double(rtl.busy_cycles) - 1.0;
  std::printf("calibration %-44s rtl %9llu cycles, model %9llu (%+.3f%%); stalls %llu / %llu\n", what.c_str(),
              (unsigned long long)rtl.busy_cycles, (unsigned long long)model.busy_cycles, 100 * error,
              (unsigned long long)rtl.stall_cycles, (unsigned long long)model.stall_cycles);
  EXPECT_LE(std::abs(error), kContract) << what;
}

#ifdef SYSTOLE_CALIBRATE_128
const uint32_t kSizes[] = {128};
#else
const uint32_t kSizes[] = {4, 8, 16};
#endif

TEST(PerfCalibration, RandomCommandLists) {
  for (const uint32_t size : kSizes) {
    auto [rtl_device, rtl] = open_counted("hw_emu", size);
    auto [model_device, model] = open_counted("perf", size);
    for (uint32_t seed = 1; seed <= (size == 128 ? 2u : 4u); ++seed) {
      testing::WorkloadOptions options;
      options.shape = {size, size};
      options.descriptors = 2 + seed;
      options.max_m = 256;
      const testing::Workload workload = testing::make_workload(seed, options);
      const auto list = encode_command_lists(workload.rebased(0), 65536).at(0);
      const auto rtl_run = testing::run_on_device(rtl_device, workload.memory, list);
      const auto model_run = testing::run_on_device(model_device, workload.memory, list);
      ASSERT_TRUE(rtl_run.status.ok()) << rtl_run.status.to_string();
      ASSERT_TRUE(model_run.status.ok()) << model_run.status.to_string();
      EXPECT_EQ(rtl_run.memory, model_run.memory) << "seed " << seed << ": the results differ";
      compare(
          std::to_string(size) + "x" + std::to_string(size) + " random list, seed " + std::to_string(seed),
          *rtl, *model);
      rtl->reset();
      model->reset();
    }
  }
}

// One GEMM tiled by plan_gemm, operands in bank 0 (A, then B, C and bias
// at awkward offsets), run as its command lists.
void run_gemm(Device& device, uint32_t m, uint32_t n, uint32_t k, bool bias_relu, uint32_t seed) {
  const uint64_t a = 0, b = a + uint64_t(m) * k * 2 + 66;
  const uint64_t c = (b + uint64_t(k) * n * 2 + 195) & ~uint64_t(3);  // fp32: 4-byte aligned
  const uint64_t bias = c + uint64_t(m) * n * 4 + 4;
  std::vector<uint8_t> memory(bias + n * 4, 0);
  std::mt19937 rng(seed);
  for (uint64_t i = 0; i < c; i += 2) memory[i + 1] = uint8_t(0x3C + rng() % 4);  // bf16 around 1/64..1
  GemmProblem problem;
  problem.m = m;
  problem.n = n;
  problem.k = k;
  problem.a = {a, k};
  problem.b = {b, n};
  problem.c = {c, n};
  problem.bias = problem.relu = bias_relu;
  problem.bias_address = bias;
  auto descriptors = plan_gemm(device.info(), problem);
  ASSERT_TRUE(descriptors.ok()) << descriptors.status().to_string();
  for (const auto& list : encode_command_lists(*descriptors, device.info().max_descriptors)) {
    const auto run = testing::run_on_device(device, memory, list);
    ASSERT_TRUE(run.status.ok()) << run.status.to_string();
  }
}

TEST(PerfCalibration, AwkwardGemms) {
  struct Case {
    uint32_t m, n, k;
    bool bias_relu;
  };
#ifdef SYSTOLE_CALIBRATE_128
  const Case cases[] = {{200, 150, 300, true}, {129, 257, 130, false}};
#else
  const Case cases[] = {
      {300, 77, 1000, true}, {37, 500, 129, false}, {256, 256, 256, true}, {1, 33, 17, false}};
#endif
  for (const uint32_t size : kSizes) {
    if (size < 16) continue;
    for (const Case& g : cases) {
      auto [rtl_device, rtl] = open_counted("hw_emu", size);
      auto [model_device, model] = open_counted("perf", size);
      run_gemm(rtl_device, g.m, g.n, g.k, g.bias_relu, 7);
      run_gemm(model_device, g.m, g.n, g.k, g.bias_relu, 7);
      char what[80];
      std::snprintf(what, sizeof what, "%ux%u GEMM %ux%ux%u%s", size, size, g.m, g.n, g.k,
                    g.bias_relu ? " +bias,ReLU" : "");
      compare(what, *rtl, *model);
    }
  }
}

// The vector engine: random lists of every opcode (awkward sizes and
// addresses, outputs in place), and a few fixed long descriptors; the same
// bus bytes as the RTL, and its cycles.
TEST(PerfCalibration, VectorDescriptors) {
  constexpr uint64_t kBytes = 4 * 48 * 1024;
  for (const uint32_t size : kSizes) {
    auto [rtl_device, rtl] = open_counted("hw_emu", size);
    auto [model_device, model] = open_counted("perf", size);
    for (uint32_t seed = 1; seed <= 3; ++seed) {
      std::mt19937_64 rng(seed);
      const std::vector<uint8_t> image = testing::random_image(rng, kBytes);
      std::vector<spec::CommandRecord> records;
      for (spec::Opcode op : testing::kVectorOpcodes)
        records.push_back(spec::record_of(testing::random_descriptor(op, rng, kBytes)));
      if (seed == 1) {  // long ones: an Adam step, a sum of 5 rows, both to_bf16 layouts
        spec::VectorDescriptor adam{};
        adam.opcode = uint8_t(spec::Opcode::kAdam);
        adam.n = 3001;
        adam.alpha = 0.001f, adam.beta = 0.9f, adam.gamma = 0.999f, adam.delta = 1e-7f;
        adam.x_addr = 4, adam.y_addr = 0x4004, adam.z_addr = 0x8008, adam.w_addr = 0xc00c;
        records.push_back(spec::record_of(adam));
        spec::VectorDescriptor sum{};
        sum.opcode = uint8_t(spec::Opcode::kSum);
        sum.n = 777, sum.rows = 5, sum.stride = 800;
        sum.x_addr = 0x10000, sum.z_addr = 0x14004;
        records.push_back(spec::record_of(sum));
        spec::VectorDescriptor convert{};
        convert.opcode = uint8_t(spec::Opcode::kToBf16);
        convert.flags = spec::vector_flag::kTranspose;
        convert.n = 300, convert.rows = 37, convert.stride = 301;
        convert.x_addr = 0x18000, convert.z_addr = 0x24002;
        records.push_back(spec::record_of(convert));
        convert.flags = 0;
        convert.z_addr = 0x2a000;
        records.push_back(spec::record_of(convert));
      }
      const auto list = encode_command_lists(records, 65536).at(0);
      const auto rtl_run = testing::run_on_device(rtl_device, image, list);
      const auto model_run = testing::run_on_device(model_device, image, list);
      ASSERT_TRUE(rtl_run.status.ok()) << rtl_run.status.to_string();
      ASSERT_TRUE(model_run.status.ok()) << model_run.status.to_string();
      const std::string what =
          std::to_string(size) + "x" + std::to_string(size) + " vector list, seed " + std::to_string(seed);
      EXPECT_EQ(testing::first_difference(rtl_run.memory, model_run.memory), "") << what;
      EXPECT_EQ(model->read_bytes, rtl->read_bytes) << what;
      EXPECT_EQ(model->write_bytes, rtl->write_bytes) << what;
      compare(what, *rtl, *model);
      rtl->reset();
      model->reset();
    }
  }
}

TEST(PerfCalibration, TrainingSteps) {
  const uint32_t size = kSizes[sizeof kSizes / sizeof kSizes[0] - 1];
  const uint32_t seed = 5;
  TrainerConfig config;
  const uint32_t inputs = 100, classes = 10;
  config.model = dense_stack(inputs, {size == 128 ? 160u : 48u}, classes);
  config.global_batch = 32;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  Batch batch;
  batch.size = config.global_batch;
  for (uint32_t e = 0; e < batch.size; ++e) {
    for (uint32_t f = 0; f < inputs; ++f) batch.values.push_back(uniform(rng));
    batch.labels.push_back(uint8_t(e % classes));
  }
  for (const Placement placement : {Placement::kHost, Placement::kDevice}) {
    config.placement = placement;
    auto [rtl_device, rtl] = open_counted("hw_emu", size);
    auto [model_device, model] = open_counted("perf", size);
    for (Device device : {rtl_device, model_device}) {
      auto trainer = Trainer::create(device, {0}, config).value();
      for (int step = 0; step < 2; ++step) ASSERT_TRUE(trainer->step(batch).ok());
    }
    compare(std::to_string(size) + "x" + std::to_string(size) + " MLP 100-" +
                std::to_string(size == 128 ? 160 : 48) + "-10, 2 training steps" +
                (placement == Placement::kDevice ? ", on the card" : ""),
            *rtl, *model);
  }
}

}  // namespace
}  // namespace systole
