// SPDX-License-Identifier: Apache-2.0
// Helpers for driving Verilated models in the RTL tests: lanes of packed
// ports, and random bf16 values that reach the contract's corners.
#pragma once

#include <cstdint>
#include <random>
#include <type_traits>

#include "systole/numerics.h"

namespace systole::rtl_testing {

// Lane `index` of a packed port of `bits`-wide lanes (16 or 32). Verilator
// makes ports of up to 64 bits integers, wider ones arrays of 32-bit words;
// lanes of 16 and 32 bits never straddle a word.
template <class Port>
void set_lane(Port& port, uint32_t index, uint32_t bits, uint64_t value) {
  const uint64_t mask = (uint64_t(1) << bits) - 1;
  if constexpr (std::is_integral_v<Port>) {
    port = Port((uint64_t(port) & ~(mask << (index * bits))) | (value & mask) << (index * bits));
  } else {
    const uint32_t word = index * bits / 32, shift = index * bits % 32;
    port[word] = uint32_t((port[word] & ~(mask << shift)) | (value & mask) << shift);
  }
}

template <class Port>
uint32_t get_lane32(const Port& port, uint32_t index) {
  if constexpr (std::is_integral_v<Port>)
    return uint32_t(uint64_t(port) >> (32 * index));
  else
    return port[index];
}

// Mostly N(0,1) values, with zeros, subnormals, Inf, NaN and huge values.
inline uint16_t random_bf16(std::mt19937& rng) {
  switch (rng() % 16) {
    case 0:
      return uint16_t((rng() & 1) << 15);
    case 1:
      return uint16_t((rng() & 1) << 15 | (rng() & 0x7F));
    case 2:
      return rng() % 4 ? uint16_t(0x7F80 | (rng() & 1) << 15) : 0x7FC1;
    case 3:
      return uint16_t((rng() & 1) << 15 | (0xF0 + rng() % 14) << 7 | (rng() & 0x7F));
    default:
      return numerics::f32_to_bf16(std::normal_distribution<float>()(rng));
  }
}

}  // namespace systole::rtl_testing
