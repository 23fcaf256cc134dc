// SPDX-License-Identifier: Apache-2.0
// The RTL arithmetic units under Verilator (label rtl) against numerics.h,
// which the numerics tests check exhaustively against the reference: every
// bf16 value times a set of boundary values plus random products, and random
// sums that stress cancellation, alignment and both ends of the range. The
// vector engine's fp32 operations against the test reference's integer
// arithmetic, and its lane (every elementwise opcode) against vector_ops.h.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <iterator>
#include <memory>
#include <random>
#include <sstream>
#include <vector>

#include "Vsystole_bf16_mul.h"
#include "Vsystole_fp32_add.h"
#include "Vsystole_fp32_ops_top.h"
#include "Vsystole_vector_lane.h"
#include "common/awkward_fp32.h"
#include "coverage.h"
#include "reference/reference.h"
#include "systole/numerics.h"
#include "systole/vector_ops.h"
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

// The vector engine's fp32 operations (NUMERICS.md, "The vector engine") on
// canonical and non-canonical operands alike (the RTL reads a subnormal
// as a zero itself), against the reference's integer arithmetic.
TEST(RtlArithmetic, VectorOperationsMatchTheReference) {
  auto context = std::make_unique<VerilatedContext>();
  auto ops = std::make_unique<Vsystole_fp32_ops_top>(context.get());
  sim::CoverageWriter coverage(context.get());
  const uint32_t seed = 41;
  std::printf("seed %u\n", seed);
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 4'000'000; ++i) {
    const uint32_t a = testing::awkward_bits(rng), b = testing::awkward_bits(rng);
    ops->a_i = a;
    ops->b_i = b;
    ops->eval();
    const uint32_t ca = reference::canonical(a), cb = reference::canonical(b);
    const auto where = [&](const char* op) {
      std::ostringstream out;
      out << std::hex << op << " of 0x" << a << " and 0x" << b << " (seed " << std::dec << seed
          << ", iteration " << i << ")";
      return out.str();
    };
    ASSERT_EQ(ops->sub_o, reference::fsub(ca, cb)) << where("sub");
    ASSERT_EQ(ops->mul_o, reference::fmul(ca, cb)) << where("mul");
    ASSERT_EQ(ops->div_o, reference::fdiv(ca, cb)) << where("div");
    ASSERT_EQ(ops->sqrt_o, reference::fsqrt(ca)) << where("sqrt");
  }
}

// Tininess after rounding, at the cases NUMERICS.md names.
TEST(RtlArithmetic, TinyIsJudgedAfterRounding) {
  auto context = std::make_unique<VerilatedContext>();
  auto ops = std::make_unique<Vsystole_fp32_ops_top>(context.get());
  auto mul = [&](float a, float b) {
    ops->a_i = f32_bits(a);
    ops->b_i = f32_bits(b);
    ops->eval();
    return ops->mul_o;
  };
  // 2^-126 (1 - 2^-25) rounds to 2^-126 at 24 bits: not tiny.
  EXPECT_EQ(mul(std::ldexp(18631.0f, -75), std::ldexp(1801.0f, -76)), 0x00800000u);
  // 2^-126 - 2^-150 is tiny after rounding: a signed zero.
  EXPECT_EQ(mul(std::ldexp(16777215.0f, -75), -std::ldexp(1.0f, -75)), 0x80000000u);
}

// The lane computes each elementwise opcode as vector_ops.h's vector_block
// (and a sum's step as the engine's add), on awkward operands and scalars.
TEST(RtlArithmetic, TheVectorLaneComputesEveryOpcodeAsTheSpec) {
  auto context = std::make_unique<VerilatedContext>();
  auto lane = std::make_unique<Vsystole_vector_lane>(context.get());
  sim::CoverageWriter coverage(context.get());
  const uint32_t seed = 43;
  std::printf("seed %u\n", seed);
  std::mt19937_64 rng(seed);
  const spec::FlushToZero flush_to_zero;
  using spec::Opcode;
  const Opcode kOps[] = {Opcode::kAxpby, Opcode::kMul,  Opcode::kRelu, Opcode::kReluGrad,
                         Opcode::kSgd,   Opcode::kAdam, Opcode::kSum};
  for (int i = 0; i < 1'000'000; ++i) {
    const Opcode op = kOps[rng() % std::size(kOps)];
    spec::VectorDescriptor d{};
    d.opcode = uint8_t(op);
    auto scalar = [&]() { return rng() % 4 == 0 ? 0.0f : f32_from_bits(testing::awkward_bits(rng)); };
    d.alpha = scalar(), d.beta = scalar(), d.gamma = scalar(), d.delta = scalar();
    if (rng() % 2) d.flags = spec::vector_flag::kNesterov;
    const spec::VectorScalars s = spec::VectorScalars::of(d);
    uint32_t in[4];
    for (uint32_t& value : in) value = testing::awkward_bits(rng);
    // The spec's result on canonical copies.
    float x = f32_from_bits(reference::canonical(in[0]));
    float v[3];
    for (int j = 0; j < 3; ++j) v[j] = f32_from_bits(reference::canonical(in[1 + j]));
    uint32_t expected[3];
    if (op == Opcode::kSum) {
      expected[0] = in[1], expected[2] = in[3];
      expected[1] = f32_bits(numerics::f32_canonical(spec::vector_math::add(v[1], x)));
    } else {
      spec::vector_block(op, s, 1, &x, &v[0], &v[1], &v[2]);
      const spec::VectorOperands operands = spec::vector_operands(op);
      for (int j = 0; j < 3; ++j) expected[j] = operands.written[1 + j] ? f32_bits(v[j]) : in[1 + j];
    }
    lane->opcode_i = uint8_t(op);
    lane->nesterov_i = s.nesterov;
    lane->alpha_i = f32_bits(s.alpha), lane->beta_i = f32_bits(s.beta);
    lane->gamma_i = f32_bits(s.gamma), lane->delta_i = f32_bits(s.delta);
    lane->one_minus_beta_i = f32_bits(numerics::f32_canonical(spec::vector_math::sub(1.0f, s.beta)));
    lane->one_minus_gamma_i = f32_bits(numerics::f32_canonical(spec::vector_math::sub(1.0f, s.gamma)));
    lane->x_i = in[0], lane->y_i = in[1], lane->z_i = in[2], lane->w_i = in[3];
    lane->eval();
    const uint32_t got[3] = {lane->y_o, lane->z_o, lane->w_o};
    for (int j = 0; j < 3; ++j)
      ASSERT_EQ(got[j], expected[j]) << spec::opcode_name(uint8_t(op)) << " output "
                                     << "yzw"[j] << std::hex << " of x 0x" << in[0] << " y 0x" << in[1]
                                     << " z 0x" << in[2] << " w 0x" << in[3] << " (seed " << std::dec << seed
                                     << ", iteration " << i << ")";
  }
}

}  // namespace
}  // namespace systole
