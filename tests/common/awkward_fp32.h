// SPDX-License-Identifier: Apache-2.0
// fp32 bit patterns that exercise every rule of the vector engine's
// arithmetic (NUMERICS.md, "The vector engine"), for the tests of each of
// its models: both zeros, subnormals, the smallest normals and the values
// just under them, the largest finite values, infinities, NaNs with
// payloads and signs, exponents where products, quotients and squares
// leave the range, and ordinary training values.
#pragma once

#include <cstdint>
#include <iterator>
#include <random>

namespace systole::testing {

inline uint32_t awkward_bits(std::mt19937_64& rng) {
  static const uint32_t kSpecial[] = {0x00000000, 0x80000000, 0x00000001, 0x807FFFFF, 0x00800000, 0x80800000,
                                      0x00800001, 0x00FFFFFF, 0x01000000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000,
                                      0xFF800000, 0x7FC00000, 0xFFC00001, 0x7F800001, 0x3F800000, 0xBF800000,
                                      0x3F7FFFFF, 0x1F800000, 0x5F800000, 0x20000000, 0x1FFFFFFF};
  switch (rng() % 8) {
    case 0:
      return kSpecial[rng() % std::size(kSpecial)];
    case 1:  // exponents at both ends, where products and quotients leave the range
      return uint32_t(rng() & 0x807FFFFF) | uint32_t((rng() % 2 ? 1 + rng() % 40 : 214 + rng() % 40) << 23);
    case 2:  // exponents around 2^-63 and 2^63, whose squares land at the edges
      return uint32_t(rng() & 0x807FFFFF) | uint32_t((rng() % 2 ? 60 + rng() % 8 : 186 + rng() % 8) << 23);
    default:  // ordinary training values, 2^-20 .. 2^4
      return uint32_t(rng() & 0x807FFFFF) | uint32_t((107 + rng() % 24) << 23);
  }
}

}  // namespace systole::testing
