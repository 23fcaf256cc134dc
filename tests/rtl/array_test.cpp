// The weight-stationary array under Verilator (label rtl): K tiles of random
// weights and activations (typical values, zeros, subnormals, Inf, NaN),
// the next tile's weights shifting into the other bank while the current
// tile computes, random idle cycles; every column sum compared bit for bit
// with the contract's chain (+0, then one product per PE row).
#include <gtest/gtest.h>

#include <deque>
#include <memory>
#include <random>
#include <type_traits>
#include <vector>

#include "Vsystole_array_4x4.h"
#include "Vsystole_array_8x5.h"
#include "systole/numerics.h"
#include "verilated.h"

namespace systole {
namespace {

// Lane `index` of a packed Verilator port of `bits`-wide lanes: ports of up
// to 64 bits are integers, wider ones VlWide arrays of 32-bit words.
template <class Port>
void set_lane(Port& port, uint32_t index, uint32_t bits, uint64_t value) {
  const uint64_t mask = (uint64_t(1) << bits) - 1;
  if constexpr (std::is_integral_v<Port>) {
    port = Port((uint64_t(port) & ~(mask << (index * bits))) | (value & mask) << (index * bits));
  } else {
    const uint32_t word = index * bits / 32, shift = index * bits % 32;  // lanes never straddle
    port[word] = uint32_t((port[word] & ~(mask << shift)) | (value & mask) << shift);
  }
}

template <class Port>
uint32_t get_lane32(const Port& port, uint32_t index) {
  if constexpr (std::is_integral_v<Port>) return uint32_t(uint64_t(port) >> (32 * index));
  else return port[index];
}

uint16_t random_bf16(std::mt19937& rng) {
  switch (rng() % 16) {
    case 0: return uint16_t((rng() & 1) << 15);                   // +-0
    case 1: return uint16_t((rng() & 1) << 15 | (rng() & 0x7F));  // subnormal
    case 2: return rng() % 4 ? uint16_t(0x7F80 | (rng() & 1) << 15) : 0x7FC1;  // Inf, NaN
    case 3: return uint16_t((rng() & 1) << 15 | (0xF0 + rng() % 14) << 7 | (rng() & 0x7F));  // huge
    default: return numerics::f32_to_bf16(std::normal_distribution<float>()(rng));
  }
}

template <class Model, uint32_t Rows, uint32_t Cols>
void run_tiles(uint32_t seed, uint32_t tiles) {
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
  auto array = std::make_unique<Model>(context.get());
  auto tick = [&] {
    array->clk_i = 0;
    array->eval();
    array->clk_i = 1;
    array->eval();
  };

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
    if (load_tile < tiles &&
        (load_tile < 2 || (last_vector[load_tile - 2] >= 0 &&
                           cycle > last_vector[load_tile - 2] + int64_t(Rows + Cols)))) {
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
    if (stream_tile < tiles && loaded[stream_tile] >= 0 && cycle > loaded[stream_tile] &&
        rng() % 5 != 0) {
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
    if (array->sum_valid_o) {
      const std::vector<uint32_t> want = expected.front();
      expected.pop_front();
      for (uint32_t c = 0; c < Cols; ++c)
        ASSERT_EQ(get_lane32(array->sum_o, c), want[c])
            << std::hex << "seed " << std::dec << seed << ", output vector " << received << ", column " << c;
      ++received;
    }
  }
}

TEST(RtlArray, FourByFourMatchesTheContract) {
  for (uint32_t seed = 1; seed <= 20; ++seed) run_tiles<Vsystole_array_4x4, 4, 4>(seed, 6);
}

TEST(RtlArray, EightByFiveMatchesTheContract) {
  for (uint32_t seed = 1; seed <= 20; ++seed) run_tiles<Vsystole_array_8x5, 8, 5>(seed, 6);
}

}  // namespace
}  // namespace systole
