// SPDX-License-Identifier: Apache-2.0
// The vector engine (label emu): its fp32 operations against the test
// reference's integer arithmetic, its descriptors on both sw_emu engines
// against the reference bit for bit, and every malformed vector descriptor
// ending the launch with the spec's code and index, nothing written.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>

#include "common/awkward_fp32.h"
#include "common/engines.h"
#include "common/vector_workload.h"
#include "reference/reference.h"
#include "systole/descriptor.h"
#include "systole/numerics.h"
#include "systole/optimizer.h"
#include "systole/validate.h"
#include "systole/vector_ops.h"

namespace systole::testing {
namespace {

using spec::Opcode;

// The vector engine at 8x8 (the array size does not matter to it).
constexpr spec::ArrayShape kShape{8, 8, 1024, spec::feature::kVectorEngine};

uint32_t bits_of(float value) { return numerics::f32_bits(value); }

// The engine's operations as a table, for one implementation.
struct MathOps {
  const char* name;
  float (*add)(float, float);
  float (*sub)(float, float);
  float (*mul)(float, float);
  float (*div)(float, float);
  float (*sqrt)(float);
};
const MathOps kMathOps[] = {
    {"vector_math (the host's SSE under FlushToZero)", spec::vector_math::add, spec::vector_math::sub,
     spec::vector_math::mul, spec::vector_math::div, spec::vector_math::sqrt},
    {"portable_math", spec::portable_math::add, spec::portable_math::sub, spec::portable_math::mul,
     spec::portable_math::div, spec::portable_math::sqrt},
};

TEST(VectorNumerics, OperationsMatchTheReferenceBitForBit) {
  const uint32_t seed = 2026;
  std::printf("seed %u\n", seed);
  const spec::FlushToZero flush_to_zero;
  using Ref = uint32_t (*)(uint32_t, uint32_t);
  for (const MathOps& math : kMathOps) {
    SCOPED_TRACE(math.name);
    std::mt19937_64 rng(seed);
    const struct {
      const char* name;
      float (*op)(float, float);
      Ref ref;
    } ops[] = {{"add", math.add, reference::add},
               {"sub", math.sub, reference::fsub},
               {"mul", math.mul, reference::fmul},
               {"div", math.div, reference::fdiv}};
    for (int i = 0; i < 1'500'000; ++i) {
      const uint32_t a = reference::canonical(awkward_bits(rng)), b = reference::canonical(awkward_bits(rng));
      for (const auto& op : ops) {
        // A NaN result is canonicalised where the engine writes it.
        const uint32_t got =
            bits_of(numerics::f32_canonical(op.op(numerics::f32_from_bits(a), numerics::f32_from_bits(b))));
        ASSERT_EQ(got, op.ref(a, b)) << op.name << std::hex << " of 0x" << a << " and 0x" << b;
      }
      ASSERT_EQ(bits_of(numerics::f32_canonical(math.sqrt(numerics::f32_from_bits(a)))), reference::fsqrt(a))
          << "sqrt of 0x" << std::hex << a;
    }
  }
}

TEST(VectorNumerics, TinyIsJudgedAfterRounding) {
  const spec::FlushToZero flush_to_zero;
  // 18631 * 1801 = 2^25 - 1: the product 2^-126 (1 - 2^-25) rounds to 2^-126
  // at 24 bits, so it is not tiny and stays 2^-126 (before rounding it was).
  const float a = std::ldexp(18631.0f, -75), b = std::ldexp(1801.0f, -76);
  // 2^-126 - 2^-150 needs 24 bits: tiny after rounding, so a signed zero
  // (rounded to a subnormal it would have become 2^-126).
  const float c = std::ldexp(16777215.0f, -75), d = -std::ldexp(1.0f, -75);
  for (const MathOps& math : kMathOps) {
    SCOPED_TRACE(math.name);
    EXPECT_EQ(bits_of(math.mul(a, b)), 0x00800000u);
    EXPECT_EQ(bits_of(math.mul(c, d)), 0x80000000u);
    EXPECT_EQ(bits_of(math.div(numerics::f32_from_bits(0x00800000), -2.0f)), 0x80000000u);
    EXPECT_EQ(bits_of(math.sub(1.0f, 1.0f)), 0u);
    EXPECT_EQ(bits_of(math.sqrt(-0.0f)), 0x80000000u);
    EXPECT_TRUE(std::isnan(math.sqrt(-1.0f)));
    EXPECT_EQ(bits_of(math.mul(numerics::f32_from_bits(0x7F7FFFFF), 2.0f)), 0x7F800000u);
  }
  EXPECT_EQ(reference::fmul(bits_of(a), bits_of(b)), 0x00800000u);
  EXPECT_EQ(reference::fmul(bits_of(c), bits_of(d)), 0x80000000u);
}

// The host runs the elementwise opcodes through the widest build of the
// engine's loops its processor has (AVX-512, AVX2); each must give the
// baseline build's bits, on operands that are subnormal, infinite and NaN
// too (x86 reads them in place), at a length no vector width divides.
TEST(VectorNumerics, EveryHostBuildGivesTheBaselineBits) {
  const uint32_t seed = 77;
  std::printf("seed %u\n", seed);
  const std::vector<spec::VectorBlockBuild> builds = spec::vector_block_builds();
  ASSERT_STREQ(builds.front().name, "baseline");
  for (const spec::VectorBlockBuild& build : builds) std::printf("build %s\n", build.name);
  std::mt19937_64 rng(seed);
  auto awkward = [&](std::size_t count) {
    std::vector<float> values(count);
    for (float& value : values) value = numerics::f32_from_bits(awkward_bits(rng));
    return values;
  };
  const spec::FlushToZero flush_to_zero;
  for (int round = 0; round < 40; ++round) {
    for (Opcode op : kVectorOpcodes) {
      if (op == Opcode::kSum || op == Opcode::kToBf16) continue;  // not elementwise
      const std::size_t count = 1 + rng() % 1500;
      spec::VectorScalars scalars;
      const std::vector<float> s = awkward(4);
      // An ordinary scalar now and then, as optimizers pass.
      scalars.alpha = round % 2 ? s[0] : 1e-3f;
      scalars.beta = round % 3 ? s[1] : 0.9f;
      scalars.gamma = round % 3 ? s[2] : 0.999f;
      scalars.delta = s[3];
      scalars.nesterov = rng() % 2;
      const std::vector<float> x = awkward(count), y = awkward(count), z = awkward(count), w = awkward(count);
      std::vector<float> expected[3] = {y, z, w};
      builds.front().run(op, scalars, count, x.data(), expected[0].data(), expected[1].data(),
                         expected[2].data());
      for (const spec::VectorBlockBuild& build : builds) {
        std::vector<float> got[3] = {y, z, w};
        build.run(op, scalars, count, x.data(), got[0].data(), got[1].data(), got[2].data());
        for (int j = 0; j < 3; ++j)
          for (std::size_t i = 0; i < count; ++i)
            ASSERT_EQ(bits_of(got[j][i]), bits_of(expected[j][i]))
                << build.name << ", " << spec::opcode_name(uint8_t(op)) << ", round " << round << ", operand "
                << "yzw"[j] << ", element " << i << " of " << count << std::hex << ": x 0x" << bits_of(x[i]);
      }
    }
  }
}

class VectorEngine : public ::testing::TestWithParam<EmuEngine> {};

TEST_P(VectorEngine, DescriptorsMatchTheReferenceBitForBit) {
  const EmuEngine engine = GetParam();
  constexpr uint64_t kBytes = 4 * 48 * 1024;  // four regions of 48 KiB
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    std::mt19937_64 rng(seed);
    const std::vector<uint8_t> image = random_image(rng, kBytes);
    // One list of every opcode, twice, in a random order: later descriptors
    // read what earlier ones wrote.
    std::vector<spec::VectorDescriptor> list;
    for (int round = 0; round < 2; ++round)
      for (Opcode op : kVectorOpcodes) list.push_back(random_descriptor(op, rng, kBytes));
    std::shuffle(list.begin(), list.end(), rng);
    std::vector<uint8_t> expected = image;
    for (const auto& d : list) reference::vector(d, expected);

    const Outcome outcome = run_sw_emu_list(image, encode_list(list), kShape, engine);
    SCOPED_TRACE("seed " + std::to_string(seed));
    ASSERT_TRUE(outcome.status.ok()) << outcome.status.to_string();
    EXPECT_EQ(outcome.counters.descriptors_done, list.size());
    EXPECT_GT(outcome.counters.busy_cycles, 0u);
    EXPECT_EQ(first_difference(expected, outcome.memory), "");
  }
}

TEST_P(VectorEngine, AnAdamStepIsKerasAdam) {
  // One element against Keras' formula in double: the same step to fp32's
  // precision (the bits are the differential test's business), and m to
  // the bit: its float expression below rounds each operation as the engine.
  const EmuEngine engine = GetParam();
  std::vector<uint8_t> image(256);
  const float values[] = {0.5f /*g*/, 0.1f /*m*/, 0.01f /*v*/, 2.0f /*w*/};
  for (int i = 0; i < 4; ++i) std::memcpy(image.data() + 64 * i, &values[i], 4);
  spec::VectorDescriptor adam{};
  adam.opcode = uint8_t(Opcode::kAdam);
  adam.n = 1;
  adam.alpha = 0.001f, adam.beta = 0.9f, adam.gamma = 0.999f, adam.delta = 1e-7f;
  adam.x_addr = 0, adam.y_addr = 64, adam.z_addr = 128, adam.w_addr = 192;
  const Outcome outcome = run_sw_emu_list(image, encode_list({adam}), kShape, engine);
  ASSERT_TRUE(outcome.status.ok()) << outcome.status.to_string();
  float m, v, w;
  std::memcpy(&m, outcome.memory.data() + 64, 4);
  std::memcpy(&v, outcome.memory.data() + 128, 4);
  std::memcpy(&w, outcome.memory.data() + 192, 4);
  const float expected_m = float(double(0.9f * 0.1f) + double(float(1.0f - 0.9f) * 0.5f));
  EXPECT_EQ(m, expected_m);
  EXPECT_NEAR(v, 0.999 * 0.01 + 0.001 * 0.25, 1e-8);
  EXPECT_NEAR(w, 2.0 - 0.001 * expected_m / (std::sqrt(double(v)) + 1e-7), 1e-7);
}

// ---------------------------------------------------------------------------
// The host's optimizers and the engine: the same step, to the bit.

// Values of a training run, with a share of tiny ones whose squares and
// products fall below 2^-126, where the flush-to-zero rule decides bits.
float training_value(std::mt19937_64& rng, float scale) {
  const float value = std::normal_distribution<float>(0.0f, scale)(rng);
  return rng() % 5 == 0 ? value * 1e-20f : value;
}

// Each of the optimizer's steps on the host (Optimizer::apply) and on the
// engine (its vector_update as descriptors over the same state in device
// memory: decoupled decay as axpby, then the update) leave the same bits in
// the values and the slots.
void expect_engine_steps_equal_host(const OptimizerConfig& config, EmuEngine engine, uint32_t seed) {
  std::printf("seed %u\n", seed);
  std::mt19937_64 rng(seed);
  ParameterStore store;
  store.declare("0.weight", {37}, Region::kTrainable);
  store.declare("1.weight", {3, 101}, Region::kTrainable);
  for (float& w : store.trainable()) w = training_value(rng, 1.0f);
  auto made = make_optimizer(config, store);
  ASSERT_TRUE(made.ok()) << made.status().message();
  Optimizer& optimizer = **made;
  const std::size_t values = store.trainable().size();
  const std::size_t slots = optimizer.state().size();
  // The image: gradients, each slot, then the values, each `values` long.
  auto region = [&](std::size_t k) { return uint64_t(k) * values * sizeof(float); };
  const std::size_t regions = 2 + slots;
  for (int step = 1; step <= 3; ++step) {
    for (float& g : store.gradients()) g = training_value(rng, 0.5f);
    std::vector<uint8_t> image(region(regions));
    std::memcpy(image.data() + region(0), store.gradients().data(), values * sizeof(float));
    for (std::size_t k = 0; k < slots; ++k)
      std::memcpy(image.data() + region(1 + k), optimizer.state()[k].values->data(), values * sizeof(float));
    std::memcpy(image.data() + region(1 + slots), store.trainable().data(), values * sizeof(float));
    const float lr = optimizer.learning_rate();
    optimizer.apply(store);

    const std::optional<Optimizer::VectorUpdate> form = optimizer.vector_update(lr);
    ASSERT_TRUE(form.has_value()) << config.name;
    std::vector<spec::VectorDescriptor> list;
    for (const ParameterStore::Entry& entry : store.entries()) {
      auto at = [&](std::size_t k) { return region(k) + entry.offset * sizeof(float); };
      if (optimizer.weight_decay() > 0) {
        spec::VectorDescriptor decay{};
        decay.opcode = uint8_t(Opcode::kAxpby);
        decay.n = uint32_t(entry.size);
        decay.alpha = -(lr * optimizer.weight_decay());
        decay.beta = 1.0f;
        decay.x_addr = decay.y_addr = at(1 + slots);
        list.push_back(decay);
      }
      spec::VectorDescriptor update{};
      update.opcode = uint8_t(form->opcode);
      update.flags = form->scalars.nesterov ? spec::vector_flag::kNesterov : 0;
      update.n = uint32_t(entry.size);
      update.alpha = form->scalars.alpha, update.beta = form->scalars.beta;
      update.gamma = form->scalars.gamma, update.delta = form->scalars.delta;
      uint64_t* operands[3] = {&update.y_addr, &update.z_addr, &update.w_addr};  // slots, then values
      update.x_addr = at(0);
      for (std::size_t k = 0; k <= slots; ++k) *operands[k] = at(1 + k);
      list.push_back(update);
    }
    const Outcome outcome = run_sw_emu_list(image, encode_list(list), kShape, engine);
    ASSERT_TRUE(outcome.status.ok()) << outcome.status.to_string();
    auto expect_region = [&](std::size_t k, const std::vector<float>& host, const std::string& what) {
      for (std::size_t i = 0; i < values; ++i) {
        uint32_t device;
        std::memcpy(&device, outcome.memory.data() + region(k) + i * sizeof(float), sizeof device);
        ASSERT_EQ(device, bits_of(host[i])) << config.name << " step " << step << ", " << what << " " << i;
      }
    };
    for (std::size_t k = 0; k < slots; ++k)
      expect_region(1 + k, *optimizer.state()[k].values, optimizer.state()[k].name);
    expect_region(1 + slots, store.trainable(), "value");
  }
}

TEST_P(VectorEngine, TheHostOptimizersStepAsTheEngine) {
  OptimizerConfig sgd;
  sgd.name = "sgd";
  sgd.learning_rate = 0.05f;
  OptimizerConfig nesterov = sgd;
  nesterov.nesterov = true;
  nesterov.weight_decay = 0.01f;
  OptimizerConfig adam;
  adam.learning_rate = 0.002f;
  OptimizerConfig adamw = adam;
  adamw.name = "adamw";
  uint32_t seed = 30;
  for (const OptimizerConfig& config : {sgd, nesterov, adam, adamw}) {
    SCOPED_TRACE(config.name);
    expect_engine_steps_equal_host(config, GetParam(), seed++);
  }
}

INSTANTIATE_TEST_SUITE_P(Emu, VectorEngine, ::testing::Values(EmuEngine::kHls, EmuEngine::kFast),
                         [](const auto& info) { return info.param == EmuEngine::kHls ? "hls" : "fast"; });

// The fast engine works on whole arrays; it reports the bus traffic and
// cycles of the HLS kernel's block schedule (add_vector_traffic), so that
// sw_emu's counters are the HLS kernel's whichever engine runs.
TEST(VectorEngines, CountTheSameTrafficAndCycles) {
  constexpr uint64_t kBytes = 4 * 48 * 1024;
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    std::mt19937_64 rng(100 + seed);
    const std::vector<uint8_t> image = random_image(rng, kBytes);
    std::vector<spec::VectorDescriptor> list;
    for (Opcode op : kVectorOpcodes) list.push_back(random_descriptor(op, rng, kBytes));
    const Outcome hls = run_sw_emu_list(image, encode_list(list), kShape, EmuEngine::kHls);
    const Outcome fast = run_sw_emu_list(image, encode_list(list), kShape, EmuEngine::kFast);
    SCOPED_TRACE("seed " + std::to_string(100 + seed));
    ASSERT_TRUE(hls.status.ok() && fast.status.ok());
    EXPECT_EQ(fast.counters.dma_read_bytes, hls.counters.dma_read_bytes);
    EXPECT_EQ(fast.counters.dma_write_bytes, hls.counters.dma_write_bytes);
    EXPECT_EQ(fast.counters.busy_cycles, hls.counters.busy_cycles);
    EXPECT_EQ(first_difference(hls.memory, fast.memory), "");
  }
}

// ---------------------------------------------------------------------------
// Malformed vector descriptors.

constexpr uint64_t kDeviceBytes = 2 * (64ull << 20);  // as engines.cpp opens it
constexpr uint64_t kImageBytes = 4096;

spec::VectorDescriptor good_adam() {
  spec::VectorDescriptor d{};
  d.opcode = uint8_t(Opcode::kAdam);
  d.n = 100;
  d.alpha = 0.001f, d.beta = 0.9f, d.gamma = 0.999f, d.delta = 1e-7f;
  d.x_addr = 0, d.y_addr = 1024, d.z_addr = 2048, d.w_addr = 3072;
  return d;
}

spec::VectorDescriptor good_sum() {
  spec::VectorDescriptor d{};
  d.opcode = uint8_t(Opcode::kSum);
  d.n = 10, d.rows = 4, d.stride = 16;
  d.x_addr = 0, d.z_addr = 2048;
  return d;
}

spec::VectorDescriptor good_to_bf16() {
  spec::VectorDescriptor d{};
  d.opcode = uint8_t(Opcode::kToBf16);
  d.flags = spec::vector_flag::kTranspose;
  d.n = 10, d.rows = 6, d.stride = 12;
  d.x_addr = 0, d.z_addr = 2050;
  return d;
}

struct VectorCorruption {
  const char* name;
  spec::VectorDescriptor (*good)();  // the valid descriptor it breaks
  std::function<void(spec::VectorDescriptor&)> apply;
  spec::ErrorCode expected;
};

const VectorCorruption kVectorCorruptions[] = {
    {"unknown_opcode", good_adam, [](auto& d) { d.opcode = 10; }, spec::ErrorCode::kBadOpcode},
    {"transpose_on_sum", good_sum, [](auto& d) { d.flags = spec::vector_flag::kTranspose; },
     spec::ErrorCode::kBadFlags},
    {"to_bf16_rows_zero", good_to_bf16, [](auto& d) { d.rows = 0; }, spec::ErrorCode::kBadDimension},
    {"to_bf16_stride_short", good_to_bf16, [](auto& d) { d.stride = 9; }, spec::ErrorCode::kBadLeadingDim},
    {"to_bf16_output_odd", good_to_bf16, [](auto& d) { d.z_addr = 2051; },
     spec::ErrorCode::kMisalignedAddress},
    {"to_bf16_output_past_the_end", good_to_bf16, [](auto& d) { d.z_addr = kDeviceBytes - 100; },
     spec::ErrorCode::kAddressOutOfRange},
    {"to_bf16_output_on_its_input", good_to_bf16, [](auto& d) { d.z_addr = d.x_addr; },
     spec::ErrorCode::kOverlappingBuffers},
    {"nesterov_on_adam", good_adam, [](auto& d) { d.flags = spec::vector_flag::kNesterov; },
     spec::ErrorCode::kBadFlags},
    {"reserved0", good_adam, [](auto& d) { d.reserved0 = 4; }, spec::ErrorCode::kBadFlags},
    {"rows_outside_sum", good_adam, [](auto& d) { d.rows = 1; }, spec::ErrorCode::kBadFlags},
    {"unused_scalar", good_sum, [](auto& d) { d.alpha = -0.0f; }, spec::ErrorCode::kBadFlags},
    {"unused_address", good_sum, [](auto& d) { d.w_addr = 64; }, spec::ErrorCode::kBadFlags},
    {"n_zero", good_adam, [](auto& d) { d.n = 0; }, spec::ErrorCode::kBadDimension},
    {"n_too_big", good_adam, [](auto& d) { d.n = spec::kMaxVectorElements + 1; },
     spec::ErrorCode::kBadDimension},
    {"rows_zero", good_sum, [](auto& d) { d.rows = 0; }, spec::ErrorCode::kBadDimension},
    {"rows_too_many", good_sum, [](auto& d) { d.rows = spec::kMaxVectorRows + 1; },
     spec::ErrorCode::kBadDimension},
    {"stride_short", good_sum, [](auto& d) { d.stride = 9; }, spec::ErrorCode::kBadLeadingDim},
    {"misaligned", good_adam, [](auto& d) { d.z_addr += 2; }, spec::ErrorCode::kMisalignedAddress},
    {"past_the_end", good_adam, [](auto& d) { d.w_addr = kDeviceBytes - 200; },
     spec::ErrorCode::kAddressOutOfRange},
    {"near_2_64", good_adam, [](auto& d) { d.x_addr = ~uint64_t(0) - 3; },
     spec::ErrorCode::kAddressOutOfRange},
    {"sum_rows_past_the_end", good_sum, [](auto& d) { d.stride = uint32_t(kDeviceBytes / 8); },
     spec::ErrorCode::kAddressOutOfRange},
    {"outputs_overlap", good_adam, [](auto& d) { d.z_addr = d.y_addr + 8; },
     spec::ErrorCode::kOverlappingBuffers},
    {"two_outputs_on_one_buffer", good_adam, [](auto& d) { d.w_addr = d.y_addr; },
     spec::ErrorCode::kOverlappingBuffers},
    {"output_on_part_of_an_input", good_adam, [](auto& d) { d.y_addr = d.x_addr + 4; },
     spec::ErrorCode::kOverlappingBuffers},
    {"sum_output_inside_its_rows", good_sum, [](auto& d) { d.z_addr = 16 * 4; },
     spec::ErrorCode::kOverlappingBuffers},
};

class VectorErrors : public ::testing::TestWithParam<std::tuple<EmuEngine, VectorCorruption>> {};

TEST_P(VectorErrors, ReportCodeAndIndexAndWriteNothing) {
  const auto& [engine, corruption] = GetParam();
  const uint32_t seed = 17;
  std::mt19937_64 rng(seed);
  const std::vector<uint8_t> image = random_image(rng, kImageBytes);
  // Two good descriptors, then the bad one: nothing may run.
  spec::VectorDescriptor bad = corruption.good();
  corruption.apply(bad);
  const std::vector<spec::VectorDescriptor> list = {good_sum(), good_adam(), bad};
  const Outcome outcome = run_sw_emu_list(image, encode_list(list), kShape, engine);
  SCOPED_TRACE(std::string("seed ") + std::to_string(seed) + ", corruption " + corruption.name);
  EXPECT_EQ(outcome.status.code(), StatusCode::kDeviceError) << outcome.status.to_string();
  EXPECT_EQ(outcome.error, corruption.expected)
      << spec::error_code_name(outcome.error) << " instead of " << spec::error_code_name(corruption.expected);
  EXPECT_EQ(outcome.error_index, 2u);
  // The message names the descriptor and its opcode as the list has it.
  const uint8_t opcode = list[2].opcode;
  const std::string named =
      spec::opcode_name(opcode) ? spec::opcode_name(opcode) : "opcode " + std::to_string(opcode);
  EXPECT_NE(outcome.status.message().find("in descriptor 2 (" + named + ")"), std::string::npos)
      << outcome.status.message();
  EXPECT_EQ(outcome.counters.descriptors_done, 0u);
  EXPECT_EQ(first_difference(image, outcome.memory), "") << "memory was written";
}

INSTANTIATE_TEST_SUITE_P(Emu, VectorErrors,
                         ::testing::Combine(::testing::Values(EmuEngine::kHls, EmuEngine::kFast),
                                            ::testing::ValuesIn(kVectorCorruptions)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param) == EmuEngine::kHls ? "hls_" : "fast_") +
                                  std::get<1>(info.param).name;
                         });

TEST(VectorEngine, AKernelWithoutTheEngineRefusesItsOpcodes) {
  // As the RTL today and the perf backend's model: Features reads 0, and a
  // vector descriptor is an unknown opcode there.
  std::mt19937_64 rng(3);
  const std::vector<uint8_t> image = random_image(rng, kImageBytes);
  const spec::ArrayShape without{8, 8};
  for (EmuEngine engine : {EmuEngine::kHls, EmuEngine::kFast}) {
    const Outcome outcome = run_sw_emu_list(image, encode_list({good_sum(), good_adam()}), without, engine);
    EXPECT_EQ(outcome.error, spec::ErrorCode::kBadOpcode);
    EXPECT_EQ(outcome.error_index, 0u);
    EXPECT_EQ(first_difference(image, outcome.memory), "");
  }
  DeviceOptions options;
  options.array_rows = options.array_cols = 8;
  EXPECT_TRUE(Device::open("sw_emu", 0, options)->info().has_vector_engine());
  options.sw_emu_features = 0;
  EXPECT_FALSE(Device::open("sw_emu", 0, options)->info().has_vector_engine());
}

}  // namespace
}  // namespace systole::testing
