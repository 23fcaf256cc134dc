// SPDX-License-Identifier: Apache-2.0
// The numerics contract: numerics.h against the independent reference,
// exhaustively where the input space allows (all bf16 values, all fp32
// conversions, all bf16 products) and on boundary patterns for sums.
#include "systole/numerics.h"

#include <gtest/gtest.h>

#include <cinttypes>
#include <cstdio>
#include <random>
#include <vector>

#include "common/exhaustive.h"
#include "reference/reference.h"

namespace systole {
namespace {

using numerics::f32_bits;
using numerics::f32_from_bits;
using testing::first_failure;

TEST(Numerics, AllBf16WidenLikeTheReference) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    ASSERT_EQ(f32_bits(numerics::bf16_to_f32(uint16_t(bits))), reference::bf16_to_f32(uint16_t(bits)))
        << "bf16 0x" << std::hex << bits;
  }
}

// The exhaustive checks over all 2^32 inputs take minutes on two cores:
// they are label slow (ctest -L slow). The default set checks the same
// functions on every sign, exponent and upper significand, with the bits
// the rounding reads (round, sticky) on their boundaries and at random,
// and every bf16 against every sign and exponent of the other operand.

// splitmix64: the pseudo-random significands, from kSampleSeed.
constexpr uint64_t kSampleSeed = 0x5EED0F5A11;
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

TEST(Numerics, Fp32RoundingOfEveryBf16PrefixMatchesTheReference) {
  // The low 16 bits: exact, the smallest and largest below the tie, the
  // tie, just above it, the largest; then four at random.
  constexpr uint32_t kFixed[] = {0x0000, 0x0001, 0x7FFF, 0x8000, 0x8001, 0xFFFF};
  constexpr uint64_t kLows = 10;
  std::printf("sample seed 0x%" PRIx64 "\n", kSampleSeed);
  const uint64_t failure = first_failure((1ull << 16) * kLows, [&](uint64_t i) {
    const uint64_t prefix = i / kLows, pick = i % kLows;
    const uint32_t low = pick < 6 ? kFixed[pick] : uint32_t(mix(kSampleSeed ^ i) & 0xFFFF);
    const uint32_t bits = uint32_t(prefix << 16) | low;
    return numerics::f32_bits_to_bf16(bits) == reference::f32_to_bf16(bits);
  });
  ASSERT_EQ(failure, (1ull << 16) * kLows) << "prefix 0x" << std::hex << failure / kLows << ", sample "
                                           << failure % kLows << " (seed 0x" << kSampleSeed << ")";
}

TEST(Numerics, Bf16ProductsOfEveryOperandAndExponentClassMatchTheReference) {
  // Every a, against b of every sign and exponent, with b's significand
  // 0, the largest, and two at random.
  constexpr uint64_t kSignificands = 4;
  std::printf("sample seed 0x%" PRIx64 "\n", kSampleSeed);
  const uint64_t count = (1ull << 16) * 512 * kSignificands;
  const uint64_t failure = first_failure(count, [&](uint64_t i) {
    const uint16_t a = uint16_t(i / (512 * kSignificands));
    const uint32_t sign_exponent = uint32_t(i / kSignificands % 512), pick = uint32_t(i % kSignificands);
    const uint32_t significand = pick == 0 ? 0 : pick == 1 ? 0x7F : uint32_t(mix(kSampleSeed ^ i) & 0x7F);
    const uint16_t b = uint16_t(sign_exponent << 7 | significand);
    return f32_bits(numerics::mul(a, b)) == reference::mul(a, b);
  });
  ASSERT_EQ(failure, count) << "0x" << std::hex << failure / (512 * kSignificands)
                            << " * sign and exponent 0x" << failure / kSignificands % 512 << ", sample "
                            << failure % kSignificands << " (seed 0x" << kSampleSeed << ")";
}

TEST(Numerics, ExhaustiveFp32RoundingMatchesTheReference) {
  const uint64_t failure = first_failure(1ull << 32, [](uint64_t i) {
    const uint32_t bits = uint32_t(i);
    return numerics::f32_bits_to_bf16(bits) == reference::f32_to_bf16(bits);
  });
  ASSERT_EQ(failure, 1ull << 32) << "fp32 0x" << std::hex << failure << " -> 0x"
                                 << numerics::f32_bits_to_bf16(uint32_t(failure)) << ", reference 0x"
                                 << reference::f32_to_bf16(uint32_t(failure));
}

TEST(Numerics, AllFp32RoundToBf16InArraysLikeOneByOne) {
  constexpr uint64_t kChunk = 4096;
  const uint64_t failure = first_failure((1ull << 32) / kChunk, [](uint64_t chunk) {
    float in[kChunk];
    uint16_t out[kChunk];
    for (uint64_t i = 0; i < kChunk; ++i) in[i] = f32_from_bits(uint32_t(chunk * kChunk + i));
    numerics::f32_to_bf16_array(in, out, kChunk);
    for (uint64_t i = 0; i < kChunk; ++i)
      if (out[i] != numerics::f32_bits_to_bf16(uint32_t(chunk * kChunk + i))) return false;
    return true;
  });
  ASSERT_EQ(failure, (1ull << 32) / kChunk)
      << "a value in fp32 0x" << std::hex << failure * kChunk << " + 4096";
}

TEST(Numerics, ExhaustiveBf16ProductsMatchTheReference) {
  const uint64_t failure = first_failure(1ull << 32, [](uint64_t i) {
    const uint16_t a = uint16_t(i >> 16), b = uint16_t(i);
    return f32_bits(numerics::mul(a, b)) == reference::mul(a, b);
  });
  ASSERT_EQ(failure, 1ull << 32) << "0x" << std::hex << (failure >> 16) << " * 0x" << (failure & 0xFFFF);
}

TEST(Numerics, RoundingBoundaries) {
  struct Case {
    uint32_t f32;
    uint16_t bf16;
    const char* why;
  };
  const Case cases[] = {
      {0x3F808000, 0x3F80, "tie, even below: stays"},
      {0x3F818000, 0x3F82, "tie, odd below: rounds up"},
      {0x3F808001, 0x3F81, "just above the tie: up"},
      {0x3F807FFF, 0x3F80, "just below the tie: down"},
      {0x7F7F8000, 0x7F80, "tie at the largest finite: even is Inf"},
      {0x7F7F7FFF, 0x7F7F, "just below: largest finite"},
      {0x7F7FFFFF, 0x7F80, "FLT_MAX rounds to Inf"},
      {0xFF7FFFFF, 0xFF80, "-FLT_MAX rounds to -Inf"},
      {0x007FFFFF, 0x0000, "largest subnormal flushes, not rounds up"},
      {0x807FFFFF, 0x8000, "negative subnormal keeps its sign"},
      {0x00800000, 0x0080, "smallest normal"},
      {0x7F800000, 0x7F80, "Inf"},
      {0xFFC00001, 0x7FC0, "negative NaN: canonical, sign dropped"},
      {0x7F800001, 0x7FC0, "signalling NaN: canonical"},
      {0x80000000, 0x8000, "-0"},
  };
  for (const Case& c : cases) EXPECT_EQ(numerics::f32_bits_to_bf16(c.f32), c.bf16) << c.why;
}

TEST(Numerics, ProductBoundaries) {
  // 2^-63 * 2^-63 = 2^-126: smallest normal, kept.
  EXPECT_EQ(f32_bits(numerics::mul(0x2000, 0x2000)), 0x00800000u);
  // 2^-63 * 2^-64 = 2^-127: below normal, flushed; sign of the product.
  EXPECT_EQ(f32_bits(numerics::mul(0x2000, 0x1F80)), 0x00000000u);
  EXPECT_EQ(f32_bits(numerics::mul(0xA000, 0x1F80)), 0x80000000u);
  // 2^64 * 2^64 = 2^128: overflow to Inf, with sign.
  EXPECT_EQ(f32_bits(numerics::mul(0x5F80, 0x5F80)), 0x7F800000u);
  EXPECT_EQ(f32_bits(numerics::mul(0xDF80, 0x5F80)), 0xFF800000u);
  // (2 - 2^-7) * 2^63 squared is just below 2^128: exact and finite.
  EXPECT_EQ(f32_bits(numerics::mul(0x5F7F, 0x5F7F)), reference::mul(0x5F7F, 0x5F7F));
  EXPECT_NE(f32_bits(numerics::mul(0x5F7F, 0x5F7F)), 0x7F800000u);
  // Subnormal inputs read as zero: the product is a signed zero.
  EXPECT_EQ(f32_bits(numerics::mul(0x0001, 0x7F00)), 0x00000000u);
  EXPECT_EQ(f32_bits(numerics::mul(0x8001, 0x7F00)), 0x80000000u);
  // Inf * 0 and NaN: canonical NaN.
  EXPECT_EQ(f32_bits(numerics::mul(0x7F80, 0x0000)), 0x7FC00000u);
  EXPECT_EQ(f32_bits(numerics::mul(0xFFC1, 0x3F80)), 0x7FC00000u);
  // Inf * subnormal is Inf * 0.
  EXPECT_EQ(f32_bits(numerics::mul(0x7F80, 0x0001)), 0x7FC00000u);
}

uint32_t sum_bits(uint32_t a, uint32_t b) {
  return f32_bits(numerics::add(f32_from_bits(a), f32_from_bits(b)));
}

TEST(Numerics, SumBoundaries) {
  // Signed zeros, IEEE rules.
  EXPECT_EQ(sum_bits(0x80000000, 0x80000000), 0x80000000u);
  EXPECT_EQ(sum_bits(0x80000000, 0x00000000), 0x00000000u);
  EXPECT_EQ(sum_bits(0x3F800000, 0xBF800000), 0x00000000u);  // 1 - 1 = +0
  // Cancellation into the subnormal range flushes to a zero of the sum's sign.
  EXPECT_EQ(sum_bits(0x00C00000, 0x80800000), 0x00000000u);  // 1.5m - m
  EXPECT_EQ(sum_bits(0x80C00000, 0x00800000), 0x80000000u);  // -1.5m + m
  // Cancellation that stays normal is exact.
  EXPECT_EQ(sum_bits(0x01000000, 0x80800000), 0x00800000u);  // 2m - m = m
  // Overflow to Inf; Inf - Inf is the canonical NaN.
  EXPECT_EQ(sum_bits(0x7F7FFFFF, 0x7F7FFFFF), 0x7F800000u);
  EXPECT_EQ(sum_bits(0x7F800000, 0xFF800000), 0x7FC00000u);
  EXPECT_EQ(sum_bits(0xFF800000, 0x3F800000), 0xFF800000u);
  // Ties to even: 1 + 2^-24 stays 1; (1 + 2^-23) + 2^-24 rounds up.
  EXPECT_EQ(sum_bits(0x3F800000, 0x33800000), 0x3F800000u);
  EXPECT_EQ(sum_bits(0x3F800001, 0x33800000), 0x3F800002u);
}

// Random pairs drawn to stress the adder: nearby exponents (cancellation),
// far exponents (alignment, sticky bits), values near both range ends.
TEST(Numerics, RandomSumsMatchTheReference) {
  const uint32_t seed = 20261122;
  std::mt19937 rng(seed);
  auto draw = [&]() -> uint32_t {
    const uint32_t kind = rng() % 8;
    uint32_t sign = (rng() & 1) << 31, mantissa = rng() & 0x7FFFFF, exponent;
    switch (kind) {
      case 0:
        exponent = 1 + rng() % 4;
        break;  // near the bottom
      case 1:
        exponent = 250 + rng() % 5;
        break;  // near the top
      case 2:
        return sign;  // zeros
      case 3:
        return rng() % 16 == 0 ? 0x7FC00000u : sign | 0x7F800000u;
      default:
        exponent = 100 + rng() % 56;
        break;  // the middle
    }
    return sign | exponent << 23 | mantissa;
  };
  for (int i = 0; i < 20'000'000; ++i) {
    const uint32_t a = draw();
    // Half the time, b is a's neighbour of opposite sign: deep cancellation.
    uint32_t b = draw();
    if (i % 2 && (a & 0x7F800000) != 0x7F800000) b = (a ^ 0x80000000u) + int32_t(rng() % 64) - 32;
    b = numerics::f32_canonical_bits(b);
    ASSERT_EQ(sum_bits(a, b), reference::add(a, b))
        << "seed " << seed << " iteration " << i << ": 0x" << std::hex << a << " + 0x" << b;
  }
}

TEST(Numerics, ReluAndCanonicalInputs) {
  EXPECT_EQ(f32_bits(numerics::relu(f32_from_bits(0x80000000))), 0x00000000u);
  EXPECT_EQ(f32_bits(numerics::relu(-3.0f)), 0x00000000u);
  EXPECT_EQ(f32_bits(numerics::relu(3.0f)), f32_bits(3.0f));
  EXPECT_EQ(f32_bits(numerics::relu(f32_from_bits(0x7FC00000))), 0x7FC00000u);
  EXPECT_EQ(numerics::f32_canonical_bits(0x80000001), 0x80000000u);
  EXPECT_EQ(numerics::f32_canonical_bits(0xFFFFFFFF), 0x7FC00000u);
  for (uint32_t bits : {0x80000001u, 0x00400000u, 0xFF812345u, 0x3F800000u})
    EXPECT_EQ(numerics::f32_canonical_bits(bits), reference::canonical(bits));
}

}  // namespace
}  // namespace systole
