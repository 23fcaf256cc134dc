// SPDX-License-Identifier: Apache-2.0
// The RTL arithmetic units under Verilator (label rtl) against numerics.h,
// which the numerics tests check exhaustively against the reference: every
// bf16 value times a set of boundary values plus random products, and random
// sums that stress cancellation, alignment and both ends of the range.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <vector>

#include "Vsystole_bf16_mul.h"
#include "Vsystole_fp32_add.h"
#include "coverage.h"
#include "systole/numerics.h"
#include "verilated.h"

namespace systole {
namespace {

using numerics::f32_bits;
using numerics::f32_from_bits;

TEST(RtlArithmetic, Bf16ProductsMatchTheContract) {
  auto context = std::make_unique<VerilatedContext>();
  auto mul = std::make_unique<Vsystole_bf16_mul>(context.get());
  sim::CoverageWriter coverage(context.get());  // after the model: ends first
  auto check = [&](uint16_t a, uint16_t b) {
    mul->a_i = a;
    mul->b_i = b;
    mul->eval();
    const uint32_t expected = f32_bits(numerics::mul(a, b));
    if (mul->product_o != expected) {
      ADD_FAILURE() << std::hex << "0x" << a << " * 0x" << b << " = 0x" << mul->product_o << ", contract 0x"
                    << expected;
      return false;
    }
    return true;
  };
  // Boundary partners: zeros, subnormals, the smallest and largest normals,
  // exponents near the product's overflow and underflow, Inf, NaN.
  std::vector<uint16_t> partners = {0x0000, 0x8000, 0x0001, 0x807F, 0x0080, 0x8080, 0x7F7F, 0xFF7F, 0x7F80,
                                    0xFF80, 0x7FC0, 0xFFC1, 0x7F81, 0x3F80, 0xBF80, 0x3FFF, 0x4000};
  for (uint32_t exponent : {1u, 2u, 63u, 64u, 65u, 126u, 127u, 128u, 190u, 191u, 192u, 253u, 254u})
    for (uint32_t fraction : {0x00u, 0x01u, 0x40u, 0x7Fu})
      for (uint32_t sign : {0u, 1u}) partners.push_back(uint16_t(sign << 15 | exponent << 7 | fraction));
  for (uint32_t a = 0; a < 0x10000; ++a)
    for (uint16_t b : partners)
      if (!check(uint16_t(a), b)) return;
  const uint32_t seed = 31;
  std::mt19937 rng(seed);
  for (int i = 0; i < 16'000'000; ++i)
    if (!check(uint16_t(rng()), uint16_t(rng()))) {
      ADD_FAILURE() << "seed " << seed << " iteration " << i;
      return;
    }
}

TEST(RtlArithmetic, Fp32SumsMatchTheContract) {
  auto context = std::make_unique<VerilatedContext>();
  auto add = std::make_unique<Vsystole_fp32_add>(context.get());
  sim::CoverageWriter coverage(context.get());  // after the model: ends first
  const uint32_t seed = 37;
  std::mt19937 rng(seed);
  auto draw = [&]() -> uint32_t {
    const uint32_t sign = (rng() & 1) << 31, mantissa = rng() & 0x7FFFFF;
    switch (rng() % 8) {
      case 0:
        return sign | (1 + rng() % 4) << 23 | mantissa;  // near the bottom
      case 1:
        return sign | (250 + rng() % 5) << 23 | mantissa;  // near the top
      case 2:
        return sign;  // zeros
      case 3:
        return rng() % 16 == 0 ? 0x7FC00000u : sign | 0x7F800000u;
      default:
        return sign | (100 + rng() % 56) << 23 | mantissa;
    }
  };
  for (int i = 0; i < 20'000'000; ++i) {
    const uint32_t a = draw();
    uint32_t b = draw();
    // Every other pair: a's neighbourhood of opposite sign (deep cancellation).
    if (i % 2 && (a & 0x7F800000) != 0x7F800000) b = (a ^ 0x80000000u) + int32_t(rng() % 64) - 32;
    b = numerics::f32_canonical_bits(b);
    add->a_i = a;
    add->b_i = b;
    add->eval();
    const uint32_t expected = f32_bits(numerics::add(f32_from_bits(a), f32_from_bits(b)));
    ASSERT_EQ(add->sum_o, expected) << std::hex << "seed " << std::dec << seed << " iteration " << i
                                    << std::hex << ": 0x" << a << " + 0x" << b;
  }
}

}  // namespace
}  // namespace systole
