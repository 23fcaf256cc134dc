// SPDX-License-Identifier: Apache-2.0
// GEMM tiling (labels unit and emu): descriptors stay inside the device's
// limits, and a tiled GEMM on the device gives the same bits as one long-K
// descriptor would (the chaining claim of NUMERICS.md), through the reference.
#include "systole/gemm_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <random>
#include <string>

#include "card_unit.h"
#include "common/awkward_fp32.h"
#include "common/engines.h"
#include "common/exhaustive.h"
#include "reference/reference.h"
#include "systole/matmul.h"
#include "systole/numerics.h"
#include "systole/validate.h"

namespace systole {
namespace {

using namespace testing::card;

DeviceInfo device_info(uint32_t size) {
  DeviceInfo info;
  const spec::ArrayShape shape{size, size};
  info.shape = shape;
  info.max_m = shape.max_m();
  info.max_n = shape.max_n();
  info.max_k = shape.max_k();
  info.max_descriptors = shape.max_descriptors();
  return info;
}

TEST(GemmPlan, RejectsWhatTheDeviceCannotDo) {
  GemmProblem problem;
  problem.m = 0;
  problem.n = problem.k = 4;
  EXPECT_EQ(plan_gemm(device_info(4), problem).status().code(), StatusCode::kInvalidArgument);
  problem.m = 4;
  problem.a.ld = 3;  // < K
  problem.b.ld = problem.c.ld = 4;
  EXPECT_EQ(plan_gemm(device_info(4), problem).status().code(), StatusCode::kInvalidArgument);
  problem.a.ld = 100;
  problem.k = 100;
  problem.output_bf16 = true;  // K > max_k = 32 with bf16 output
  const Status status = plan_gemm(device_info(4), problem).status();
  EXPECT_NE(status.message().find("max_k"), std::string::npos) << status.message();
}

TEST(GemmPlan, SplitsIntoDeviceSizedChains) {
  const uint32_t max_m = spec::ArrayShape{4, 4}.max_m();
  GemmProblem problem;
  problem.m = max_m + 44;
  problem.n = 5;
  problem.k = 70;  // 32 + 32 + 6 on a 4x4 array
  problem.a = {0x1000, 72};
  problem.b = {0x100000, 5};
  problem.c = {0x200000, 8};
  problem.bias = problem.relu = true;
  problem.bias_address = 0x300000;
  const auto descriptors = plan_gemm(device_info(4), problem).value();
  ASSERT_EQ(descriptors.size(), 6u);
  for (std::size_t i = 0; i < descriptors.size(); ++i) {
    const spec::GemmDescriptor& d = descriptors[i];
    EXPECT_EQ(spec::validate_descriptor(d, 1ull << 32, {4, 4}), spec::ErrorCode::kOk);
    const bool first = i % 3 == 0, last = i % 3 == 2;
    EXPECT_EQ((d.flags & spec::flag::kAccumulate) != 0, !first) << i;
    EXPECT_EQ((d.flags & spec::flag::kBias) != 0, last) << i;
    EXPECT_EQ((d.flags & spec::flag::kRelu) != 0, last) << i;
  }
  EXPECT_EQ(descriptors[3].m, 44u);
  EXPECT_EQ(descriptors[4].a_addr, 0x1000 + (uint64_t(max_m) * 72 + 32) * 2);
  EXPECT_EQ(descriptors[4].b_addr, 0x100000 + 32ull * 5 * 2);
  EXPECT_EQ(descriptors[4].c_addr, 0x200000 + uint64_t(max_m) * 8 * 4);

  const auto lists = encode_command_lists(descriptors, 4);
  ASSERT_EQ(lists.size(), 2u);
  EXPECT_EQ(spec::decode<spec::CommandListHeader>(lists[1].data()).count, 2u);
  EXPECT_EQ(spec::decode<spec::GemmDescriptor>(lists[1].data() + 128).m, 44u);
}

TEST(GemmPlan, ATiledGemmOnTheDeviceEqualsOneLongDescriptor) {
  const uint32_t seed = 7, size = 8, n = 19, k = 150;           // K: 64+64+22
  const uint32_t m = spec::ArrayShape{size, size}.max_m() + 5;  // M: two blocks
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  const uint64_t a_at = 0, b_at = a_at + uint64_t(m) * k * 2, c_at = b_at + uint64_t(k) * n * 2;
  const uint64_t bias_at = c_at + uint64_t(m) * n * 4;
  std::vector<uint8_t> memory(bias_at + n * 4);
  for (uint64_t i = 0; i < uint64_t(m) * k + uint64_t(k) * n; ++i) {
    const uint16_t v = numerics::f32_to_bf16(normal(rng));
    std::memcpy(memory.data() + i * 2, &v, 2);
  }
  for (uint32_t i = 0; i < n; ++i) {
    const float v = normal(rng);
    std::memcpy(memory.data() + bias_at + i * 4, &v, 4);
  }

  GemmProblem problem;
  problem.m = m;
  problem.n = n;
  problem.k = k;
  problem.a = {a_at, k};
  problem.b = {b_at, n};
  problem.c = {c_at, n};
  problem.bias = problem.relu = true;
  problem.bias_address = bias_at;
  testing::Workload tiled;
  tiled.memory = memory;
  tiled.descriptors = plan_gemm(device_info(size), problem).value();
  ASSERT_EQ(tiled.descriptors.size(), 6u);
  const testing::Outcome device = testing::run_sw_emu(tiled, {size, size}, EmuEngine::kFast, 2);
  ASSERT_TRUE(device.status.ok()) << device.status.to_string();

  // One descriptor with the whole problem, beyond the device's limits: only
  // the reference can run it.
  spec::GemmDescriptor whole = tiled.descriptors[0];
  whole.m = m;
  whole.k = k;
  whole.flags = spec::flag::kBias | spec::flag::kRelu;
  whole.bias_addr = bias_at;
  std::vector<uint8_t> expected = memory;
  reference::gemm(whole, size, expected);
  EXPECT_EQ(testing::first_difference(expected, device.memory), "") << "seed " << seed;
}

// A DeviceMatmul on unit 0 of an 8x8 sw_emu device (which it keeps open).
std::unique_ptr<DeviceMatmul> small_matmul() {
  DeviceOptions options;
  options.array_rows = options.array_cols = 8;
  return DeviceMatmul::create(Device::open("sw_emu", 0, options).value(), 0, std::chrono::seconds(60))
      .value();
}

// Operands read with a row stride (a slice of a wider matrix, as NumPy
// views give them), plain or stored transposed, give the packed operands'
// bits; a stride shorter than a stored row is refused.
void slice_of_a_wider_matrix(uint32_t m, uint32_t k, uint32_t n, uint32_t wide) {
  const uint32_t seed = 11, offset = 3;
  SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n));
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> a(std::size_t(m) * k), b(std::size_t(k) * n);
  for (float& v : a) v = normal(rng);
  for (float& v : b) v = normal(rng);
  // A inside an m x wide matrix; A^T inside a k x wide one.
  std::vector<float> a_wide(std::size_t(m) * wide, -7.0f), a_t_wide(std::size_t(k) * wide, -7.0f);
  for (uint32_t i = 0; i < m; ++i)
    for (uint32_t p = 0; p < k; ++p) {
      a_wide[std::size_t(i) * wide + offset + p] = a[std::size_t(i) * k + p];
      a_t_wide[std::size_t(p) * wide + offset + i] = a[std::size_t(i) * k + p];
    }
  auto matmul = small_matmul();
  std::vector<float> packed(std::size_t(m) * n), strided(packed.size()), transposed(packed.size());
  MatmulCall call = product(m, n, k, a.data(), b.data(), packed.data());
  ASSERT_TRUE(matmul->run(call).ok());
  call.a = a_wide.data() + offset;
  call.lda = wide;
  call.c = strided.data();
  ASSERT_TRUE(matmul->run(call).ok());
  EXPECT_EQ(std::memcmp(packed.data(), strided.data(), packed.size() * 4), 0) << "seed " << seed;
  call.a = a_t_wide.data() + offset;
  call.a_transposed = true;
  call.c = transposed.data();
  ASSERT_TRUE(matmul->run(call).ok());
  EXPECT_EQ(std::memcmp(packed.data(), transposed.data(), packed.size() * 4), 0) << "seed " << seed;
  call.lda = m - 1;
  const Status refused = matmul->run(call);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("lda " + std::to_string(m - 1)), std::string::npos) << refused.message();
}

// The runtime's conversion (with AVX512-BF16's instruction where the CPU
// has it, else the contract's code vectorised) gives f32_to_bf16's bits for
// every fp32 value. Each block of 4,096 values goes in two calls, whose
// split moves through 0..63 so that every tail length (1..31 values after
// whole groups of 32) is met; nothing is written past a call's values.
TEST(RoundToBf16, EveryFp32ValueGivesTheContractsBits) {
  constexpr uint64_t kBlock = 4096;
  const uint64_t failure = testing::first_failure((uint64_t(1) << 32) / kBlock, [](uint64_t block) {
    float in[kBlock];
    uint16_t out[kBlock + 1];
    for (uint64_t i = 0; i < kBlock; ++i) in[i] = numerics::f32_from_bits(uint32_t(block * kBlock + i));
    const std::size_t split = block % 64;
    out[split] = out[kBlock] = 0xABCD;
    round_to_bf16(in, split, out);
    if (out[split] != 0xABCD) return false;
    round_to_bf16(in + split, kBlock - split, out + split);
    if (out[kBlock] != 0xABCD) return false;
    for (uint64_t i = 0; i < kBlock; ++i)
      if (out[i] != numerics::f32_bits_to_bf16(uint32_t(block * kBlock + i))) return false;
    return true;
  });
  ASSERT_EQ(failure, (uint64_t(1) << 32) / kBlock)
      << "a value in fp32 0x" << std::hex << failure * kBlock << " + 4096, or a write past a call's values";
}

// Where the device reaches host memory (sw_emu's fast engine), a C of 16
// KiB or more is the caller's array, which the products write in place
// (and read, accumulating). The bits are those of the staged path (the
// HLS engine, which cannot reach host memory): a plain product, one with
// bias and ReLU, and one accumulating into awkward fp32 values (NaNs,
// infinities, subnormals), at 68 x 61 x 300 (C is 16,592 bytes).
TEST(DeviceMatmulImport, ACallersResultWrittenInPlaceHasTheStagedBits) {
  const uint32_t seed = 31, m = 68, n = 61, k = 300;
  std::mt19937 rng(seed);
  const std::vector<float> a = normal_values(rng, std::size_t(m) * k),
                           b = normal_values(rng, std::size_t(k) * n);
  const std::vector<float> bias = normal_values(rng, n);
  std::mt19937_64 awkward(seed);
  std::vector<float> start(std::size_t(m) * n);
  for (float& v : start) v = numerics::f32_from_bits(testing::awkward_bits(awkward));
  auto open = [](EmuEngine engine) {
    DeviceOptions options;
    options.array_rows = options.array_cols = 16;
    options.engine = engine;
    return DeviceMatmul::create(Device::open("sw_emu", 0, options).value(), 0, std::chrono::seconds(60))
        .value();
  };
  auto in_place = open(EmuEngine::kFast), staged = open(EmuEngine::kHls);
  for (int form = 0; form < 3; ++form) {
    std::vector<float> c_in_place = start, c_staged = start;
    MatmulCall call = product(m, n, k, a.data(), b.data(), c_in_place.data());
    call.bias = form == 1 ? bias.data() : nullptr;
    call.relu = form == 1;
    call.accumulate = form == 2;
    ASSERT_TRUE(in_place->run(call).ok());
    call.c = c_staged.data();
    ASSERT_TRUE(staged->run(call).ok());
    EXPECT_EQ(std::memcmp(c_in_place.data(), c_staged.data(), c_staged.size() * 4), 0)
        << "form " << form << ", seed " << seed;
  }
  EXPECT_EQ(in_place->results_in_place(), 3u);
  EXPECT_EQ(staged->results_in_place(), 0u);
}

// Two sizes: a small one, and one whose transpose has several 64-column
// blocks of 8 x 8 tiles and edges on both sides.
TEST(DeviceMatmulStrides, ASliceOfAWiderMatrixIsReadInPlace) {
  for (const auto& [m, k, n, wide] : {std::array<uint32_t, 4>{13, 21, 6, 29}, {75, 141, 5, 150}})
    slice_of_a_wider_matrix(m, k, n, wide);
}

// Rows that copy a stored matrix (k x n or m x k), counting the requests
// for bf16.
class CountedRows final : public OperandRows {
 public:
  explicit CountedRows(const std::vector<float>& x) : x_(x) {}
  void fp32(float* out) const override { std::copy(x_.begin(), x_.end(), out); }
  void bf16(uint16_t* out) const override {
    ++requests;
    round_to_bf16(x_.data(), x_.size(), out);
  }
  mutable int requests = 0;

 private:
  const std::vector<float>& x_;
};

// An operand given as rows (made by the caller when asked, as a
// convolution's patches are) gives the stored operand's bits; rows are
// never transposed, and a call without an operand is refused.
TEST(DeviceMatmulRows, OperandsMadeOnRequestGiveTheStoredOperandsBits) {
  const uint32_t seed = 12, m = 19, k = 37, n = 11;
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> a(std::size_t(m) * k), b(std::size_t(k) * n);
  for (float& v : a) v = normal(rng);
  for (float& v : b) v = normal(rng);
  const CountedRows a_rows(a), b_rows(b);
  auto matmul = small_matmul();
  std::vector<float> stored(std::size_t(m) * n), made(stored.size());
  MatmulCall call = product(m, n, k, a.data(), b.data(), stored.data());
  ASSERT_TRUE(matmul->run(call).ok());
  call.a = call.b = nullptr;
  call.a_rows = &a_rows;
  call.b_rows = &b_rows;
  call.c = made.data();
  ASSERT_TRUE(matmul->run(call).ok());
  EXPECT_EQ(a_rows.requests, 1);
  EXPECT_EQ(b_rows.requests, 1);
  EXPECT_EQ(std::memcmp(stored.data(), made.data(), stored.size() * 4), 0) << "seed " << seed;

  call.b_transposed = true;
  Status refused = matmul->run(call);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("not transposed"), std::string::npos) << refused.message();
  call.b_transposed = false;
  call.a_rows = nullptr;
  refused = matmul->run(call);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("operand is missing"), std::string::npos) << refused.message();
}

// Rows kept under a key (a convolution's patches, from its forward product
// to its weight gradient's): made once and read again as the other
// operand with the bits of rows made again; made again, and not kept, for
// a read from another source and for other rows under the key in the
// launch that keeps them; made again and kept by a new forward pass.
TEST(DeviceMatmulRows, KeptRowsAreMadeOnceAndReadAgainAsTheOtherOperand) {
  const uint32_t seed = 14, positions = 29, patch = 23, filters = 5, n = 7;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  auto random = [&](std::size_t count) { return normal_values(rng, count); };
  const std::vector<float> patches = random(std::size_t(positions) * patch), other = random(patches.size());
  const std::vector<float> w = random(std::size_t(patch) * n), g = random(std::size_t(positions) * filters);
  const int owner = 0, source = 0, other_source = 0;
  const CountedRows rows(patches), other_rows(other);
  auto matmul = small_matmul();
  // Forward: C = P W, P kept. Weight gradient: dW = G^T P, P read again.
  auto forward = [&](const CountedRows& made, const void* from, std::vector<float>& c) {
    MatmulCall call = product(positions, n, patch, nullptr, w.data(), c.data());
    call.a_rows = &made;
    call.rows_key = RowsKey{&owner, from, 0};
    return call;
  };
  auto gradient = [&](const CountedRows& made, const void* from, std::vector<float>& c) {
    MatmulCall call = product(filters, patch, positions, g.data(), nullptr, c.data());
    call.a_transposed = true;
    call.b_rows = &made;
    call.rows_key = RowsKey{&owner, from, 0};
    call.rows_kept = true;
    return call;
  };
  // The bits of stored operands.
  std::vector<float> y(std::size_t(positions) * n), dw(std::size_t(filters) * patch);
  std::vector<float> other_y(y.size()), other_dw(dw.size());
  MatmulCall stored = product(positions, n, patch, patches.data(), w.data(), y.data());
  ASSERT_TRUE(matmul->run(stored).ok());
  stored = product(filters, patch, positions, g.data(), patches.data(), dw.data());
  stored.a_transposed = true;
  ASSERT_TRUE(matmul->run(stored).ok());
  stored = product(positions, n, patch, other.data(), w.data(), other_y.data());
  ASSERT_TRUE(matmul->run(stored).ok());
  stored = product(filters, patch, positions, g.data(), other.data(), other_dw.data());
  stored.a_transposed = true;
  ASSERT_TRUE(matmul->run(stored).ok());
  auto same = [](const std::vector<float>& x, const std::vector<float>& y) {
    return std::memcmp(x.data(), y.data(), x.size() * 4) == 0;
  };

  std::vector<float> got_y(y.size()), got_dw(dw.size());
  ASSERT_TRUE(matmul->run(forward(rows, &source, got_y)).ok());
  EXPECT_EQ(matmul->kept_rows_bytes(), std::size_t(positions) * patch * 2);
  ASSERT_TRUE(matmul->run(gradient(rows, &source, got_dw)).ok());
  EXPECT_EQ(rows.requests, 1);
  EXPECT_TRUE(same(got_y, y));
  EXPECT_TRUE(same(got_dw, dw));
  // Read as kept from another source: made, each time, and not kept.
  for (int request = 1; request <= 2; ++request) {
    ASSERT_TRUE(matmul->run(gradient(other_rows, &other_source, got_dw)).ok());
    EXPECT_EQ(other_rows.requests, request);
    EXPECT_TRUE(same(got_dw, other_dw));
  }
  ASSERT_TRUE(matmul->run(gradient(rows, &source, got_dw)).ok());
  EXPECT_EQ(rows.requests, 1);
  EXPECT_TRUE(same(got_dw, dw));
  // A new forward pass makes its rows again, and keeps them.
  ASSERT_TRUE(matmul->run(forward(other_rows, &other_source, got_y)).ok());
  EXPECT_EQ(other_rows.requests, 3);
  EXPECT_TRUE(same(got_y, other_y));
  // In one launch: the key's rows, then other rows under it in the call's
  // own slot, and the key's rows again.
  std::vector<float> second_dw(dw.size()), third_dw(dw.size());
  ASSERT_TRUE(matmul
                  ->run({forward(other_rows, &other_source, got_y), gradient(rows, &source, second_dw),
                         gradient(other_rows, &other_source, third_dw)})
                  .ok());
  EXPECT_EQ(other_rows.requests, 4);
  EXPECT_EQ(rows.requests, 2);
  EXPECT_TRUE(same(got_y, other_y));
  EXPECT_TRUE(same(second_dw, dw));
  EXPECT_TRUE(same(third_dw, other_dw));
}

// Rows kept under a key where their bank (the command lists') has no room
// go into the call's own slot, with the same bits, and are made again when
// read again; rows kept earlier give their room up to rows kept later.
TEST(DeviceMatmulRows, RowsTheBankHasNoRoomToKeepAreStagedAsUsual) {
  const uint32_t seed = 15, m = 60, n = 5;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  auto random = [&](std::size_t count) { return normal_values(rng, count); };
  // Banks of 128 KiB; the command lists' buffer takes 68 KiB of its bank
  // (1,000 descriptors) before any rows are kept there.
  DeviceOptions options;
  options.array_rows = options.array_cols = 8;
  options.hbm_banks = 4;
  options.bank_bytes = 128 << 10;
  auto matmul =
      DeviceMatmul::create(Device::open("sw_emu", 0, options).value(), 0, std::chrono::seconds(60)).value();
  const int owner = 0;
  // The product of rows (m x k, kept under `part` unless `part` < 0) with
  // B, against the stored operands' bits.
  auto check = [&](const std::vector<float>& a, const CountedRows& rows, const std::vector<float>& b,
                   int part, bool kept) {
    const uint32_t k = uint32_t(a.size() / m);
    std::vector<float> stored(std::size_t(m) * n), made(stored.size());
    ASSERT_TRUE(matmul->run(product(m, n, k, a.data(), b.data(), stored.data())).ok());
    MatmulCall call = product(m, n, k, nullptr, b.data(), made.data());
    call.a_rows = &rows;
    if (part >= 0) call.rows_key = RowsKey{&owner, a.data(), uint32_t(part)};
    call.rows_kept = kept;
    ASSERT_TRUE(matmul->run(call).ok());
    EXPECT_EQ(std::memcmp(stored.data(), made.data(), stored.size() * 4), 0);
  };
  // 72,000 bytes of rows: no room beside the lists.
  const std::vector<float> large = random(std::size_t(m) * 600), large_b = random(600 * n);
  const CountedRows large_rows(large);
  check(large, large_rows, large_b, 0, false);
  EXPECT_EQ(matmul->kept_rows_bytes(), 0u);
  check(large, large_rows, large_b, 0, true);
  EXPECT_EQ(large_rows.requests, 2);
  // 48,000 bytes: room for one part's rows at a time.
  const std::vector<float> first = random(std::size_t(m) * 400), second = random(first.size());
  const std::vector<float> b = random(400 * n);
  const CountedRows first_rows(first), second_rows(second);
  check(first, first_rows, b, 0, false);
  check(first, first_rows, b, 0, true);
  EXPECT_EQ(first_rows.requests, 1);
  EXPECT_EQ(matmul->kept_rows_bytes(), first.size() * 2);
  check(second, second_rows, b, 1, false);
  EXPECT_EQ(matmul->kept_rows_bytes(), second.size() * 2);
  check(first, first_rows, b, 0, true);  // given up: made again
  check(second, second_rows, b, 1, true);
  EXPECT_EQ(first_rows.requests, 2);
  EXPECT_EQ(second_rows.requests, 1);
}

// Two dense layers' forward and backward on a modelled card that keeps the
// parameters: with the hidden activation and its gradients left on the
// card (c_card, a_card, relu_mask_on_card) the results are the bits of the
// chain through the host, the hidden tensors read back from the card are
// the host's, and they never cross the link.
TEST(DeviceMatmulCardTensors, AChainOnTheCardGivesTheHostChainsBitsWithoutCrossingTheLink) {
  const uint32_t seed = 13, m = 13, in = 37, hidden = 21, out = 6;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  auto random = [&](std::size_t count) { return normal_values(rng, count); };
  // The parameters as a store lays them out: W1 [hidden x in], b1, W2 [out x hidden].
  std::vector<float> values = random(std::size_t(hidden) * in + hidden + std::size_t(out) * hidden);
  std::vector<float> gradients(values.size(), 0.0f);
  const float *w1 = values.data(), *b1 = w1 + std::size_t(hidden) * in, *w2 = b1 + hidden;
  const std::vector<float> x = random(std::size_t(m) * in), g2 = random(std::size_t(m) * out);

  ResidentUnit unit = resident_unit(values, gradients);
  Device& device = unit.device;
  DeviceMatmul* matmul = unit.matmul.get();
  const ResidentParameters& resident = unit.resident;

  // A card tensor needs the parameters on the card.
  const std::size_t hidden_values = std::size_t(m) * hidden;
  Status refused = matmul->allocate(hidden_values).status();
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("placement: device"), std::string::npos) << refused.message();
  matmul->keep_resident(resident);
  MatmulCall forward1 = product(m, hidden, in, x.data(), w1, nullptr);  // y1 = relu(x W1^T + b1)
  forward1.b_transposed = true;
  forward1.bias = b1;
  forward1.relu = true;

  // Both chains: y2 = y1 W2^T; g1 = relu_mask(g2 W2, y1); dW1 = g1^T x.
  struct Chain {
    std::vector<float> y1, y2, g1, masked, dw1;
    DeviceTensor y1_card, g1_card, masked_card;
  };
  auto run_chain = [&](bool card, Chain& chain) -> Status {
    chain.y1.assign(hidden_values, 0.0f);
    chain.g1.assign(hidden_values, 0.0f);
    chain.masked.assign(hidden_values, 0.0f);
    chain.y2.assign(std::size_t(m) * out, 0.0f);
    chain.dw1.assign(std::size_t(hidden) * in, 0.0f);
    if (card)
      for (DeviceTensor* tensor : {&chain.y1_card, &chain.g1_card, &chain.masked_card}) {
        auto made = matmul->allocate(hidden_values);
        if (!made.ok()) return made.status();
        *tensor = std::move(made).value();
      }
    MatmulCall f1 = forward1;
    f1.c = card ? nullptr : chain.y1.data();
    f1.c_card = chain.y1_card;
    SYSTOLE_RETURN_IF_ERROR(matmul->run(f1));
    MatmulCall f2 = product(m, out, hidden, card ? nullptr : chain.y1.data(), w2, chain.y2.data());
    f2.a_card = chain.y1_card;
    f2.b_transposed = true;
    SYSTOLE_RETURN_IF_ERROR(matmul->run(f2));
    MatmulCall dx = product(m, hidden, out, g2.data(), w2, card ? nullptr : chain.g1.data());  // g1 = g2 W2
    dx.c_card = chain.g1_card;
    SYSTOLE_RETURN_IF_ERROR(matmul->run(dx));
    if (card) {
      SYSTOLE_RETURN_IF_ERROR(matmul->relu_mask_on_card(chain.g1_card, chain.y1_card, chain.masked_card));
    } else {
      for (std::size_t i = 0; i < chain.g1.size(); ++i)
        chain.masked[i] = chain.y1[i] > 0 ? chain.g1[i] : 0.0f;
    }
    MatmulCall dw = product(hidden, in, m, card ? nullptr : chain.masked.data(), x.data(), chain.dw1.data());
    dw.a_transposed = true;
    dw.a_card = chain.masked_card;
    return matmul->run(dw);
  };
  Chain host, card;
  const uint64_t before = device.projection().value().link_bytes;
  ASSERT_TRUE(run_chain(false, host).ok());
  const uint64_t between = device.projection().value().link_bytes;
  const Status ran = run_chain(true, card);
  ASSERT_TRUE(ran.ok()) << ran.to_string();
  const uint64_t after = device.projection().value().link_bytes;
  EXPECT_EQ(std::memcmp(host.y2.data(), card.y2.data(), host.y2.size() * 4), 0);
  EXPECT_EQ(std::memcmp(host.dw1.data(), card.dw1.data(), host.dw1.size() * 4), 0);
  EXPECT_GT(std::count_if(host.masked.begin(), host.masked.end(), [](float v) { return v == 0.0f; }), 0)
      << "the mask masks something";
  // The products read y1 and the mask through bf16 copies the card made.
  EXPECT_EQ(matmul->copied_tensors(), 2u);
  // The host chain moves y1 down and up (4 + 2 bytes a value), g1 down
  // (4) and the mask up (2); the card chain moves none of them, and its
  // command lists carry three more descriptors (192 bytes).
  const uint64_t host_bytes = between - before, card_bytes = after - between;
  EXPECT_GE(host_bytes + 192, card_bytes + 12ull * m * hidden) << host_bytes << " against " << card_bytes;
  // Read back (a sync each), the card's tensors hold the host's bits.
  const std::pair<const std::vector<float>*, const DeviceTensor*> kept[] = {
      {&host.y1, &card.y1_card}, {&host.g1, &card.g1_card}, {&host.masked, &card.masked_card}};
  for (const auto& [want, tensor] : kept) {
    std::vector<float> got(tensor->count());
    ASSERT_TRUE(tensor->read(got.data()).ok());
    EXPECT_EQ(std::memcmp(got.data(), want->data(), got.size() * 4), 0);
  }

  // What the card holds too little of is refused by name.
  MatmulCall longer = forward1;
  longer.a = nullptr;
  longer.a_card = card.y1_card;
  longer.k = hidden + 1;  // reads one more column than y1 has
  longer.b = values.data();
  longer.c = host.y1.data();
  refused = matmul->run(longer);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("matmul: operand A reads " + std::to_string(m * (hidden + 1)) +
                                   " values of a tensor the card holds " + std::to_string(m * hidden)),
            std::string::npos)
      << refused.message();
  MatmulCall accumulated = forward1;
  accumulated.c_card = card.y1_card;
  accumulated.accumulate = true;
  refused = matmul->run(accumulated);
  EXPECT_NE(refused.message().find("cannot accumulate"), std::string::npos) << refused.message();
  refused = matmul->relu_mask_on_card(DeviceTensor(), card.y1_card, card.masked_card);
  EXPECT_NE(refused.message().find("relu mask: the gradient is not on the card"), std::string::npos)
      << refused.message();
}

// A device tensor's parts, views and resizings name its values (one id),
// read and write only their own span, and refuse what does not fit by
// name; the values' memory goes with the last handle.
TEST(DeviceTensor, PartsViewsAndResizesShareTheValuesAndTheirId) {
  auto refusal_of = [](const Status& status) {
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    return status.message();
  };
  std::vector<float> values(8, 1.0f), gradients(values.size(), 0.0f);
  ResidentUnit unit = resident_unit(values, gradients);
  unit.matmul->keep_resident(unit.resident);
  DeviceTensor whole = unit.matmul->allocate(12).value();
  std::vector<float> twelve(12);
  for (std::size_t i = 0; i < twelve.size(); ++i) twelve[i] = float(i) - 5.5f;
  ASSERT_TRUE(whole.write(twelve.data()).ok());
  DeviceTensor middle = whole.part(4, 6).value();
  EXPECT_TRUE(middle.same_values(whole));
  EXPECT_EQ(middle.id(), whole.id());
  EXPECT_EQ(middle.address(), whole.address() + 16);
  std::vector<float> six(6);
  ASSERT_TRUE(middle.read(six.data()).ok());
  EXPECT_EQ(six, std::vector<float>(twelve.begin() + 4, twelve.begin() + 10));
  // Shrunk and grown again in place: the same values.
  DeviceTensor shorter = whole.resized(5).value();
  EXPECT_EQ(shorter.count(), 5u);
  EXPECT_EQ(shorter.room(), 12u);
  EXPECT_EQ(shorter.resized(12).value().address(), whole.address());
  EXPECT_EQ(refusal_of(shorter.resized(13).status()), "device tensor: 13 values where its memory holds 12");
  EXPECT_EQ(refusal_of(whole.part(10, 3).status()), "device tensor: values [10, 13) of a tensor of 12");
  // A view: blocks of 2 x 3 read transposed; parts of it are whole blocks.
  DeviceTensor view = whole.blocks_transposed(2, 3).value();
  EXPECT_FALSE(view.reads_in_order());
  EXPECT_TRUE(whole.blocks_transposed(1, 12).value().reads_in_order());
  EXPECT_EQ(view.part(6, 6).value().address(), whole.address() + 24);
  EXPECT_EQ(refusal_of(view.part(3, 6).status()),
            "device tensor: values [3, 9) of a view are not whole blocks of 2 x 3");
  EXPECT_EQ(refusal_of(whole.blocks_transposed(5, 1).status()),
            "device tensor: 12 values are not whole blocks of 5 x 1");
  EXPECT_EQ(refusal_of(view.resized(6).status()), "device tensor: a view is not resized");
  // Another allocation is other values, with another id; the memory goes
  // with the last handle.
  const DeviceTensor other = unit.matmul->allocate(12).value();
  EXPECT_NE(other.id(), whole.id());
  EXPECT_FALSE(other.same_values(whole));
  std::weak_ptr<const void> lifetime = whole.lifetime();
  whole = DeviceTensor();
  EXPECT_FALSE(lifetime.expired());  // its part, view and resizing still hold the values
  middle = shorter = view = DeviceTensor();
  EXPECT_TRUE(lifetime.expired());
  EXPECT_FALSE(DeviceTensor());
  EXPECT_EQ(refusal_of(DeviceTensor().read(six.data())), "device tensor: no tensor");
}

// What a device plugin does with a tensor, through the public API: make
// it on the unit, fill it from the host, multiply with it (the result left
// on the card too) and read the result back; the bits of the same product
// from host operands.
TEST(DeviceMatmulCardTensors, ATensorIsMadeFilledMultipliedAndReadBack) {
  const uint32_t seed = 29, m = 7, k = 19, n = 5;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::vector<float> values = normal_values(rng, std::size_t(k) * n), gradients(values.size(), 0.0f);
  const std::vector<float> a = normal_values(rng, std::size_t(m) * k);
  ResidentUnit unit = resident_unit(values, gradients);
  DeviceMatmul& matmul = *unit.matmul;
  matmul.keep_resident(unit.resident);

  DeviceTensor x = matmul.allocate(a.size()).value(), y = matmul.allocate(std::size_t(m) * n).value();
  ASSERT_TRUE(x.write(a.data()).ok());
  MatmulCall call = product(m, n, k, nullptr, values.data(), nullptr);
  call.a_card = x;
  call.c_card = y;
  ASSERT_TRUE(matmul.run(call).ok());
  std::vector<float> got(y.count()), want(y.count());
  ASSERT_TRUE(y.read(got.data()).ok());
  ASSERT_TRUE(matmul.run(product(m, n, k, a.data(), values.data(), want.data())).ok());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * 4), 0);
}

// Per example, HWC to CHW (`inverse`: back), as Flatten orders the values.
std::vector<float> flatten_order(const std::vector<float>& x, uint32_t positions, uint32_t channels,
                                 bool inverse) {
  std::vector<float> y(x.size());
  const std::size_t block = std::size_t(positions) * channels;
  for (std::size_t b = 0; b < x.size() / block; ++b)
    for (uint32_t p = 0; p < positions; ++p)
      for (uint32_t c = 0; c < channels; ++c) {
        const std::size_t hwc = b * block + p * channels + c, chw = b * block + c * positions + p;
        (inverse ? y[hwc] : y[chw]) = inverse ? x[chw] : x[hwc];
      }
  return y;
}

// A convolution's output held on the card and written a chunk of examples
// at a time, a Flatten's view of it read by a dense layer's forward and dW,
// and the view of that layer's input gradient read back by the
// convolution's dW (transposed), db and dx, a chunk at a time: the bits of
// the same products through the host, with Flatten's reordering done
// there. Reads a view cannot make are refused by name.
TEST(DeviceMatmulCardTensors, ViewsReadTheirTensorsBlocksTransposed) {
  const uint32_t seed = 17, batch = 5, chunk = 2, positions = 6, filters = 7, patch = 9, units = 3;
  const uint32_t features = positions * filters;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  auto random = [&](std::size_t count) { return normal_values(rng, count); };
  // The parameters: the convolution's W [filters x patch], the dense
  // layer's W2 [units x features].
  std::vector<float> values = random(std::size_t(filters) * patch + std::size_t(units) * features);
  std::vector<float> gradients(values.size(), 0.0f);
  const float *w = values.data(), *w2 = w + std::size_t(filters) * patch;
  const std::vector<float> patches = random(std::size_t(batch) * positions * patch);
  const std::vector<float> delta = random(std::size_t(batch) * units),
                           ones(std::size_t(chunk) * positions, 1.0f);
  ResidentUnit unit = resident_unit(values, gradients);
  DeviceMatmul* matmul = unit.matmul.get();
  matmul->keep_resident(unit.resident);

  struct Chain {
    std::vector<float> y, flat, out, dw2, g_flat, g, dw, db, dx;
    DeviceTensor y_card, flat_card, g_flat_card, g_card;
  };
  const std::size_t size = std::size_t(batch) * features;
  // Values [first, first + count) of a card tensor (none on the host).
  auto part = [](const DeviceTensor& tensor, std::size_t first, std::size_t count) {
    return tensor ? tensor.part(first, count).value() : DeviceTensor();
  };
  auto run_chain = [&](bool card, Chain& r) -> Status {
    r.y.assign(size, 0.0f);
    r.g_flat.assign(size, 0.0f);
    r.out.assign(std::size_t(batch) * units, 0.0f);
    r.dw2.assign(std::size_t(units) * features, 0.0f);
    r.dw.assign(std::size_t(filters) * patch, 0.0f);
    r.db.assign(filters, 0.0f);
    r.dx.assign(std::size_t(batch) * positions * patch, 0.0f);
    if (card) {
      r.y_card = matmul->allocate(size).value();
      r.g_flat_card = matmul->allocate(size).value();
    }
    // Forward: y = patches W^T a chunk at a time; flat = flatten(y); out =
    // flat W2^T.
    for (uint32_t first = 0; first < batch; first += chunk) {
      const uint32_t rows = std::min(chunk, batch - first) * positions;
      MatmulCall call = product(rows, filters, patch, patches.data() + std::size_t(first) * positions * patch,
                                w, card ? nullptr : r.y.data() + std::size_t(first) * features);
      call.b_transposed = true;
      call.c_card = part(r.y_card, std::size_t(first) * features, std::size_t(rows) * filters);
      SYSTOLE_RETURN_IF_ERROR(matmul->run(call));
    }
    if (card)
      r.flat_card = r.y_card.blocks_transposed(positions, filters).value();
    else
      r.flat = flatten_order(r.y, positions, filters, false);
    const float* flat = card ? nullptr : r.flat.data();
    MatmulCall dense = product(batch, units, features, flat, w2, r.out.data());
    dense.a_card = r.flat_card;
    dense.b_transposed = true;
    SYSTOLE_RETURN_IF_ERROR(matmul->run(dense));
    // Backward: dW2 = delta^T flat; g_flat = delta W2; g = the view back.
    MatmulCall dw2 = product(units, features, batch, delta.data(), flat, r.dw2.data());
    dw2.a_transposed = true;
    dw2.b_card = r.flat_card;
    MatmulCall dx2 = product(batch, features, units, delta.data(), w2, card ? nullptr : r.g_flat.data());
    dx2.c_card = r.g_flat_card;
    SYSTOLE_RETURN_IF_ERROR(matmul->run({dw2, dx2}));
    if (card)
      r.g_card = r.g_flat_card.blocks_transposed(filters, positions).value();
    else
      r.g = flatten_order(r.g_flat, positions, filters, true);
    // The convolution's dW = g^T patches, db = 1^T g, dx = g W, a chunk at
    // a time, dW and db chained through C.
    for (uint32_t first = 0; first < batch; first += chunk) {
      const uint32_t rows = std::min(chunk, batch - first) * positions;
      const float* g = card ? nullptr : r.g.data() + std::size_t(first) * features;
      const DeviceTensor g_card = part(r.g_card, std::size_t(first) * features, std::size_t(rows) * filters);
      MatmulCall dw = product(filters, patch, rows, g,
                              patches.data() + std::size_t(first) * positions * patch, r.dw.data());
      dw.a_transposed = true;
      dw.a_card = g_card;
      dw.accumulate = first > 0;
      MatmulCall db = product(1, filters, rows, ones.data(), g, r.db.data());
      db.b_card = g_card;
      db.accumulate = first > 0;
      MatmulCall dx =
          product(rows, patch, filters, g, w, r.dx.data() + std::size_t(first) * positions * patch);
      dx.a_card = g_card;
      SYSTOLE_RETURN_IF_ERROR(matmul->run({dw, db, dx}));
    }
    return ok_status();
  };
  Chain host, card;
  ASSERT_TRUE(run_chain(false, host).ok());
  const Status ran = run_chain(true, card);
  ASSERT_TRUE(ran.ok()) << ran.to_string();
  const std::pair<const char*, std::vector<float> Chain::*> results[] = {
      {"out", &Chain::out}, {"dw2", &Chain::dw2}, {"dw", &Chain::dw}, {"db", &Chain::db}, {"dx", &Chain::dx}};
  for (const auto& [name, member] : results)
    EXPECT_EQ(std::memcmp((host.*member).data(), (card.*member).data(), (host.*member).size() * 4), 0)
        << name;

  // What a view cannot be used for is refused by name.
  auto refusal = [](const Status& status) {
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    return status.message();
  };
  EXPECT_EQ(refusal(card.flat_card.part(1, features).status()),
            "device tensor: values [1, 43) of a view are not whole blocks of 6 x 7");
  MatmulCall short_read = product(1, units, features - 1, nullptr, w2, card.out.data());
  short_read.a_card = card.flat_card;
  short_read.b_transposed = true;
  short_read.ldb = features;
  EXPECT_EQ(
      refusal(matmul->run(short_read)),
      "matmul: operand A reads a view of a card tensor (blocks of 6 x 7 read transposed) as 1 x 41, row "
      "stride 41, from value 0, which does not fall on whole blocks");
  EXPECT_EQ(refusal(matmul->relu_mask_on_card(card.g_card, card.y_card, card.g_flat_card)),
            "relu mask: the gradient is a view of a card tensor whose blocks read transposed; only a "
            "product's operand can read it");
  EXPECT_EQ(refusal(card.y_card.part(0, features + 1).value().blocks_transposed(positions, filters).status()),
            "device tensor: 43 values are not whole blocks of 6 x 7");
  EXPECT_EQ(refusal(card.flat_card.blocks_transposed(positions, filters).status()),
            "device tensor: the tensor viewed is itself a view");

  // A view whose blocks are single rows reads as its tensor.
  std::vector<float> from_alias(std::size_t(units), 0.0f), from_host(from_alias.size(), 0.0f);
  const DeviceTensor alias = card.g_flat_card.blocks_transposed(1, features).value();
  ASSERT_TRUE(alias.reads_in_order());
  MatmulCall read = product(1, units, features - 1, nullptr, w2, from_alias.data());
  read.a_card = alias;
  read.b_transposed = true;
  read.ldb = features;
  ASSERT_TRUE(matmul->run(read).ok());
  read.a = host.g_flat.data();
  read.a_card = DeviceTensor();
  read.c = from_host.data();
  ASSERT_TRUE(matmul->run(read).ok());
  EXPECT_EQ(std::memcmp(from_alias.data(), from_host.data(), from_host.size() * 4), 0);

  // A tensor written again is read again: the copy a product made of it
  // through its view is made anew.
  MatmulCall again = product(batch, features, units, delta.data(), w2, nullptr);  // y = delta W2
  again.c_card = card.y_card;
  ASSERT_TRUE(matmul->run(again).ok());
  std::vector<float> got(std::size_t(batch) * units), want(got.size());
  MatmulCall reread = product(batch, units, features, nullptr, w2, got.data());
  reread.a_card = card.flat_card;  // the forward's read, whose copy is out of date now
  reread.b_transposed = true;
  ASSERT_TRUE(matmul->run(reread).ok());
  const std::vector<float> flat = flatten_order(host.g_flat, positions, filters, false);
  reread.a = flat.data();  // delta W2, flattened on the host
  reread.a_card = DeviceTensor();
  reread.c = want.data();
  ASSERT_TRUE(matmul->run(reread).ok());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * 4), 0);
}

// The bookkeeping of what the card read and wrote: spans merge when they
// touch or overlap, and the gaps are the rest of the region.
TEST(Intervals, MergeTouchingSpansAndGiveTheGaps) {
  Intervals spans;
  spans.add(10, 20);
  spans.add(30, 40);
  spans.add(5, 5);  // empty: nothing
  EXPECT_TRUE(spans.contains(12, 20));
  EXPECT_FALSE(spans.contains(15, 31));
  using Gaps = std::vector<std::pair<std::size_t, std::size_t>>;
  EXPECT_EQ(spans.gaps(50), (Gaps{{0, 10}, {20, 30}, {40, 50}}));
  spans.add(20, 30);  // touches both: one span
  EXPECT_TRUE(spans.contains(10, 40));
  EXPECT_EQ(spans.gaps(50), (Gaps{{0, 10}, {40, 50}}));
  spans.add(0, 12);
  spans.add(35, 60);  // past the region's end
  EXPECT_EQ(spans.gaps(50), Gaps{});
  EXPECT_EQ(spans.gaps(70), (Gaps{{60, 70}}));
  spans.clear();
  EXPECT_EQ(spans.gaps(3), (Gaps{{0, 3}}));
}

}  // namespace
}  // namespace systole
