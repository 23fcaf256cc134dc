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

}  // namespace
}  // namespace systole
