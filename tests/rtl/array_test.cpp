// SPDX-License-Identifier: Apache-2.0
// The weight-stationary array under Verilator (label rtl): K tiles of random
// weights and activations (typical values, zeros, subnormals, Inf, NaN),
// the next tile's weights shifting into the other bank while the current
// tile computes, random idle cycles; every column sum compared bit for bit
// with the contract's chain (+0, then one product per PE row).
#include <gtest/gtest.h>

#include <deque>
#include <memory>
#include <random>
#include <vector>

#include "Vsystole_array_4x4.h"
#include "Vsystole_array_8x5.h"
#include "coverage.h"
#include "systole/numerics.h"
#include "verilated.h"
#include "verilator_ports.h"

namespace systole {
namespace {

using rtl_testing::get_lane32;
using rtl_testing::random_bf16;
using rtl_testing::set_lane;

// `early`: reload each bank Cols cycles too soon (a planted bug), and
// expect an RTL assertion to stop the run instead of comparing sums.
template <class Model, uint32_t Rows, uint32_t Cols>
void run_tiles(uint32_t seed, uint32_t tiles, bool early = false) {
  const int64_t reload_after = int64_t(Rows + Cols) - (early ? int64_t(Cols) : 0);
  std::mt19937 rng(seed);
  struct Tile {
    std::vector<uint16_t> weights;               // Rows x Cols
    std::vector<std::vector<uint16_t>> vectors;  // M x Rows
  };
  std::vector<Tile> plan(tiles);
  std::deque<std::vector<uint32_t>> expected;
  for (Tile& tile : plan) {
    tile.weights.resize(Rows * Cols);
    for (uint16_t& w : tile.weights) w = random_bf16(rng);
    tile.vectors.resize(1 + rng() % (2 * Rows + 3));
    for (auto& v : tile.vectors) {
      v.resize(Rows);
      for (uint16_t& a : v) a = random_bf16(rng);
      std::vector<uint32_t> sums(Cols);
      for (uint32_t c = 0; c < Cols; ++c) {
        float sum = 0.0f;
        for (uint32_t r = 0; r < Rows; ++r)
          sum = numerics::add(sum, numerics::mul(v[r], tile.weights[r * Cols + c]));
        sums[c] = numerics::f32_bits(sum);
      }
      expected.push_back(sums);
    }
  }

  auto context = std::make_unique<VerilatedContext>();
  context->fatalOnError(false);  // a failed assertion: gotError(), not abort
  auto array = std::make_unique<Model>(context.get());
  sim::CoverageWriter coverage(context.get());  // after the model: ends first
  auto tick = [&] {
    array->clk_i = 0;
    array->eval();
    array->clk_i = 1;
    array->eval();
  };
  array->rst_ni = 0;
  array->act_valid_i = array->weight_shift_i = 0;
  tick();
  tick();
  array->rst_ni = 1;

  // Schedule: tile t loads into bank t % 2 once tile t - 2 (same bank) has
  // drained and tile t - 1 has finished loading; tile t streams once loaded.
  std::vector<int64_t> loaded(tiles, -1), last_vector(tiles, -1);
  uint32_t load_tile = 0, load_row = 0, stream_tile = 0, stream_vector = 0;
  uint64_t received = 0;
  const uint64_t total = expected.size();
  for (int64_t cycle = 0; received < total; ++cycle) {
    ASSERT_LT(cycle, 100000) << "seed " << seed << ": outputs stopped coming";
    // Weights.
    array->weight_shift_i = 0;
    if (load_tile < tiles && (load_tile < 2 || (last_vector[load_tile - 2] >= 0 &&
                                                cycle > last_vector[load_tile - 2] + reload_after))) {
      const uint32_t row = Rows - 1 - load_row;  // bottom row first
      array->weight_shift_i = 1;
      array->weight_bank_i = load_tile % 2;
      for (uint32_t c = 0; c < Cols; ++c)
        set_lane(array->weight_i, c, 16, plan[load_tile].weights[row * Cols + c]);
      if (++load_row == Rows) {
        loaded[load_tile++] = cycle;
        load_row = 0;
      }
    }
    // Activations, with idle cycles.
    array->act_valid_i = 0;
    if (stream_tile < tiles && loaded[stream_tile] >= 0 && cycle > loaded[stream_tile] && rng() % 5 != 0) {
      const std::vector<uint16_t>& v = plan[stream_tile].vectors[stream_vector];
      array->act_valid_i = 1;
      array->act_bank_i = stream_tile % 2;
      for (uint32_t r = 0; r < Rows; ++r) set_lane(array->act_i, r, 16, v[r]);
      if (++stream_vector == plan[stream_tile].vectors.size()) {
        last_vector[stream_tile++] = cycle;
        stream_vector = 0;
      }
    }
    tick();
    if (context->gotError()) break;  // an RTL assertion failed (its %Error line says which)
    if (array->sum_valid_o && !early) {
      const std::vector<uint32_t> want = expected.front();
      expected.pop_front();
      for (uint32_t c = 0; c < Cols; ++c)
        ASSERT_EQ(get_lane32(array->sum_o, c), want[c])
            << std::hex << "seed " << std::dec << seed << ", output vector " << received << ", column " << c;
      ++received;
    } else if (array->sum_valid_o) {
      ++received;
    }
  }
  EXPECT_EQ(context->gotError(), early) << "seed " << seed;
}

// A planted controller bug: each weight bank is reloaded Cols cycles
// before the last activation naming it has left the array. The array's
// bank assertion must fire (the sums are then wrong, and not compared).
TEST(RtlArray, BankReloadedTooEarlyFailsAnAssertion) {
  for (uint32_t seed = 1; seed <= 3; ++seed) run_tiles<Vsystole_array_4x4, 4, 4>(seed, 6, /*early=*/true);
}

TEST(RtlArray, FourByFourMatchesTheContract) {
  for (uint32_t seed = 1; seed <= 20; ++seed) run_tiles<Vsystole_array_4x4, 4, 4>(seed, 6);
}

TEST(RtlArray, EightByFiveMatchesTheContract) {
  for (uint32_t seed = 1; seed <= 20; ++seed) run_tiles<Vsystole_array_8x5, 8, 5>(seed, 6);
}

}  // namespace
}  // namespace systole
