// SPDX-License-Identifier: Apache-2.0
// The compute core under Verilator (label rtl): for random GEMM tiles
// (M rows, N <= Cols columns, K over several tiles, zero padding, every
// flag), the core's words equal NUMERICS.md's formula for one descriptor:
// acc = C or +0; per K tile acc = acc + column sum; bias, ReLU, conversion.
// Also fp32 -> bf16 and input canonicalisation against numerics.h.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <vector>

#include "Vsystole_core.h"
#include "Vsystole_fp32_to_bf16.h"
#include "coverage.h"
#include "systole/numerics.h"
#include "verilated.h"
#include "verilator_ports.h"

namespace systole {
namespace {

using rtl_testing::get_lane32;
using rtl_testing::random_bf16;
using rtl_testing::set_lane;

constexpr uint32_t kRows = 4, kCols = 4, kMaxM = 64;

TEST(RtlCore, Fp32ToBf16MatchesTheContract) {
  auto context = std::make_unique<VerilatedContext>();
  auto convert = std::make_unique<Vsystole_fp32_to_bf16>(context.get());
  sim::CoverageWriter coverage(context.get());  // after the model: ends first
  // Every upper half with the low halves that decide rounding.
  const uint32_t lows[] = {0x0000, 0x0001, 0x7FFF, 0x8000, 0x8001, 0xFFFF, 0x4000, 0xC000};
  for (uint32_t high = 0; high < 0x10000; ++high)
    for (uint32_t low : lows) {
      const uint32_t value = high << 16 | low;
      convert->value_i = value;
      convert->eval();
      ASSERT_EQ(convert->bf16_o, numerics::f32_bits_to_bf16(value)) << std::hex << "0x" << value;
    }
}

struct Case {
  uint32_t m, n, k;
  bool accumulate, bias, relu, bf16;
  std::vector<uint16_t> a, b;  // M x K, K x N
  std::vector<uint32_t> c_in;  // M x N fp32 bits
  std::vector<uint32_t> bias_values;
};

Case random_case(std::mt19937& rng) {
  Case t;
  t.m = 1 + rng() % 20;
  t.n = 1 + rng() % kCols;
  t.k = 1 + rng() % (3 * kRows + 2);
  t.accumulate = rng() & 1;
  t.bias = rng() & 1;
  t.relu = rng() & 1;
  t.bf16 = rng() & 1;
  for (uint32_t i = 0; i < t.m * t.k; ++i) t.a.push_back(random_bf16(rng));
  for (uint32_t i = 0; i < t.k * t.n; ++i) t.b.push_back(random_bf16(rng));
  for (uint32_t i = 0; i < t.m * t.n; ++i)
    t.c_in.push_back(rng() % 8 ? numerics::f32_bits(std::normal_distribution<float>()(rng)) : rng());
  for (uint32_t i = 0; i < t.n; ++i)
    t.bias_values.push_back(rng() % 8 ? numerics::f32_bits(std::normal_distribution<float>()(rng)) : rng());
  return t;
}

// NUMERICS.md, "One GEMM descriptor", written out for one output.
uint32_t expected_word(const Case& t, uint32_t m, uint32_t n) {
  using numerics::add;
  using numerics::f32_from_bits;
  float acc = t.accumulate ? numerics::f32_canonical(f32_from_bits(t.c_in[m * t.n + n])) : 0.0f;
  const uint32_t tiles = (t.k + kRows - 1) / kRows;
  for (uint32_t tile = 0; tile < tiles; ++tile) {
    float sum = 0.0f;
    for (uint32_t r = 0; r < kRows; ++r) {
      const uint32_t k = tile * kRows + r;
      sum = add(sum, k < t.k ? numerics::mul(t.a[m * t.k + k], t.b[k * t.n + n]) : numerics::mul(0, 0));
    }
    acc = add(acc, sum);
  }
  if (t.bias) acc = add(acc, numerics::f32_canonical(f32_from_bits(t.bias_values[n])));
  if (t.relu) acc = numerics::relu(acc);
  return t.bf16 ? numerics::f32_to_bf16(acc) : numerics::f32_bits(acc);
}

TEST(RtlCore, OneNTileMatchesTheContract) {
  auto context = std::make_unique<VerilatedContext>();
  auto core = std::make_unique<Vsystole_core>(context.get());
  sim::CoverageWriter coverage(context.get());  // after the model: ends first
  auto tick = [&] {
    core->clk_i = 0;
    core->eval();
    core->clk_i = 1;
    core->eval();
  };
  auto idle = [&] {
    core->weight_shift_i = core->act_valid_i = core->act_final_i = core->act_last_i = core->init_valid_i = 0;
  };
  idle();
  core->rst_ni = 0;
  tick();
  tick();
  core->rst_ni = 1;
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    std::mt19937 rng(seed);
    const Case t = random_case(rng);
    const uint32_t tiles = (t.k + kRows - 1) / kRows;
    const uint32_t bank = seed % 2;  // both accumulator banks take turns
    uint32_t tiles_done = 0, rows_done = 0;
    // (1) Starting values.
    idle();
    for (uint32_t m = 0; m < t.m; ++m) {
      core->init_valid_i = 1;
      core->init_bank_i = bank;
      core->init_row_i = m;
      for (uint32_t c = 0; c < kCols; ++c)
        set_lane(core->init_i, c, 32, t.accumulate && c < t.n ? t.c_in[m * t.n + c] : 0);
      tick();
    }
    // (2) K tiles: load (bottom row first), stream M rows, drain the array.
    for (uint32_t tile = 0; tile < tiles; ++tile) {
      idle();
      for (uint32_t i = 0; i < kRows; ++i) {
        const uint32_t k = tile * kRows + (kRows - 1 - i);
        core->weight_shift_i = 1;
        core->weight_bank_i = tile % 2;
        for (uint32_t c = 0; c < kCols; ++c)
          set_lane(core->weight_i, c, 16, k < t.k && c < t.n ? t.b[k * t.n + c] : 0);
        tick();
      }
      idle();
      for (uint32_t m = 0; m < t.m; ++m) {
        core->act_valid_i = 1;
        core->act_bank_i = tile % 2;
        core->act_acc_bank_i = bank;
        core->act_row_i = m;
        core->act_final_i = tile + 1 == tiles;
        core->act_last_i = tile + 1 == tiles && m + 1 == t.m;
        for (uint32_t r = 0; r < kRows; ++r) {
          const uint32_t k = tile * kRows + r;
          set_lane(core->act_i, r, 16, k < t.k ? t.a[m * t.k + k] : 0);
        }
        tick();
        rows_done += core->row_done_o;  // early rows finish while later ones stream
      }
      idle();
      for (uint32_t i = 0; i < kRows + kCols + 1; ++i) {
        tick();
        tiles_done += core->tile_done_o;
        rows_done += core->row_done_o;
      }
    }
    ASSERT_EQ(tiles_done, 1u) << "seed " << seed << ": one tile_done after the last K tile's last sums";
    ASSERT_EQ(rows_done, t.m) << "seed " << seed << ": one row_done per row of the last K tile";
    // (3) Readout.
    core->bias_en_i = t.bias;
    core->relu_en_i = t.relu;
    core->bf16_en_i = t.bf16;
    for (uint32_t c = 0; c < kCols; ++c) set_lane(core->bias_i, c, 32, c < t.n ? t.bias_values[c] : 0);
    for (uint32_t m = 0; m < t.m; ++m) {
      core->read_bank_i = bank;
      core->read_row_i = m;
      tick();
      for (uint32_t n = 0; n < t.n; ++n)
        ASSERT_EQ(get_lane32(core->word_o, n), expected_word(t, m, n))
            << "seed " << seed << ": M=" << t.m << " N=" << t.n << " K=" << t.k << " acc=" << t.accumulate
            << " bias=" << t.bias << " relu=" << t.relu << " bf16=" << t.bf16 << ", output (" << m << ", "
            << n << ")";
    }
    idle();
    tick();
  }
}

}  // namespace
}  // namespace systole
