// SPDX-License-Identifier: Apache-2.0
// The vector engine's arithmetic, one element at a time (NUMERICS.md, "The
// vector engine"). Every C++ model of the engine calls it, and so do the
// host's optimizers whose update the engine can run: a model trained with
// its parameters on the card and one trained on the host get the same bits
// because both run this code (tests/reference checks it separately).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "systole/descriptor.h"
#include "systole/numerics.h"
#include "systole/validate.h"

namespace systole::spec {

// The vector engine's fp32 arithmetic (NUMERICS.md, "The vector engine"):
// IEEE-754 operations, round to nearest even, with subnormal operands read
// as zeros and a result that is tiny after rounding (below 2^-126 once
// rounded to 24 bits with an unbounded exponent) flushed to a zero of its
// sign. NaNs keep whatever payload an operation gives them until the engine
// canonicalises what it writes (every later operation keeps a NaN a NaN,
// so that is the same as canonicalising after every operation). Nothing is
// fused: the project builds with -ffp-contract=off.
//
// vector_math holds the operations every model calls, under FlushToZero.
// On x86 they are the processor's own: its SSE arithmetic with MXCSR's
// flush-to-zero and denormals-are-zero bits set is exactly these rules (x86
// judges tininess after rounding), and loops of them vectorise. Elsewhere
// they are portable_math's.

// The rules without the FTZ mode, on any host: the result computed in
// double (exactly for a product; for a sum, quotient or square root,
// double's 53 bits round to 24 as the exact value would, 53 >= 2 * 24 + 2)
// and its tininess judged on it scaled by 2^100, which is a normal float
// unless the result is far below 2^-126. Slower; the tests check it against
// the reference too.
namespace portable_math {
inline float round(double exact) {
  const float rounded = float(exact);
  const bool tiny = std::fabs(float(exact * 0x1p100)) < 0x1p-26f;
  return tiny ? std::copysign(0.0f, rounded) : rounded;
}
inline float add(float a, float b) { return round(double(a) + double(b)); }
inline float sub(float a, float b) { return round(double(a) - double(b)); }
inline float mul(float a, float b) { return round(double(a) * double(b)); }
inline float div(float a, float b) { return round(double(a) / double(b)); }
inline float sqrt(float a) { return round(std::sqrt(double(a))); }
}  // namespace portable_math

using numerics::FlushToZero;

#if (defined(__x86_64__) || defined(__i386__)) && !defined(__SYNTHESIS__)
// Under FlushToZero the processor reads subnormal operands as zeros (DAZ),
// comparisons included, so operands need no canonicalising before use.
inline constexpr bool kOperandsFlushInHardware = true;
#else
inline constexpr bool kOperandsFlushInHardware = false;
#endif

#if defined(__x86_64__) || defined(__i386__) || defined(__SYNTHESIS__)
// (In Vitis HLS the operators become the tool's floating-point cores, which
// flush subnormals; that they judge tininess as x86 does is not yet checked.)
namespace vector_math {
inline float add(float a, float b) { return a + b; }
inline float sub(float a, float b) { return a - b; }
inline float mul(float a, float b) { return a * b; }
inline float div(float a, float b) { return a / b; }
inline float sqrt(float a) { return std::sqrt(a); }
}  // namespace vector_math
#else
namespace vector_math = portable_math;
#endif

// The scalars of a vector descriptor, canonicalised as the engine reads
// them, and its Nesterov flag.
struct VectorScalars {
  float alpha = 0.0f, beta = 0.0f, gamma = 0.0f, delta = 0.0f;
  bool nesterov = false;

  static VectorScalars of(const VectorDescriptor& d) {
    using numerics::f32_canonical;
    return {f32_canonical(d.alpha), f32_canonical(d.beta), f32_canonical(d.gamma), f32_canonical(d.delta),
            (d.flags & vector_flag::kNesterov) != 0};
  }
  // axpby with beta +0 does not read y.
  bool reads_y(Opcode op) const { return !(op == Opcode::kAxpby && numerics::f32_bits(beta) == 0); }
};

// The fused optimizer steps, one element each (canonical inputs, under
// FlushToZero).
inline void sgd_element(const VectorScalars& s, float g, float& velocity, float& weight) {
  using namespace vector_math;
  velocity = sub(mul(s.beta, velocity), mul(s.alpha, g));
  weight = add(weight, s.nesterov ? sub(mul(s.beta, velocity), mul(s.alpha, g)) : velocity);
}

inline void adam_element(const VectorScalars& s, float g, float& m, float& v, float& weight) {
  using namespace vector_math;
  m = add(mul(s.beta, m), mul(sub(1.0f, s.beta), g));
  v = add(mul(s.gamma, v), mul(mul(sub(1.0f, s.gamma), g), g));
  weight = sub(weight, div(mul(s.alpha, m), add(sqrt(v), s.delta)));
}

inline float axpby_element(const VectorScalars& s, float x, float y) {
  return vector_math::add(vector_math::mul(s.alpha, x), vector_math::mul(s.beta, y));
}

// An elementwise opcode (every one but sum and to_bf16) over `count` values, under
// FlushToZero: x is read, y, z and w are read and written as descriptor.h's
// table says (an operand the opcode does not read may hold anything), and
// what is written is canonicalised. The operands must be canonical unless
// kOperandsFlushInHardware. One loop per opcode over a scalars'
// copy that no store can alias, so that each loop vectorises (always
// inlined, so that vector_block_host's builds for wider vectors get loops
// of their own).
#if defined(__GNUC__) && !defined(__SYNTHESIS__)
__attribute__((always_inline))
#endif
inline void
vector_block(Opcode op, const VectorScalars& scalars, std::size_t count, const float* x, float* y, float* z,
             float* w) {
  using numerics::f32_canonical;
  const VectorScalars s = scalars;
  switch (op) {
    case Opcode::kAxpby:
      if (s.reads_y(op)) {
        for (std::size_t i = 0; i < count; ++i) y[i] = f32_canonical(axpby_element(s, x[i], y[i]));
      } else {
        for (std::size_t i = 0; i < count; ++i) y[i] = f32_canonical(vector_math::mul(s.alpha, x[i]));
      }
      break;
    case Opcode::kMul:
      for (std::size_t i = 0; i < count; ++i) z[i] = f32_canonical(vector_math::mul(x[i], y[i]));
      break;
    case Opcode::kRelu:
      for (std::size_t i = 0; i < count; ++i) z[i] = f32_canonical(numerics::relu(x[i]));
      break;
    case Opcode::kReluGrad:
      for (std::size_t i = 0; i < count; ++i) z[i] = f32_canonical(y[i] > 0.0f ? x[i] : 0.0f);
      break;
    case Opcode::kSgd:
      for (std::size_t i = 0; i < count; ++i) {
        float velocity = y[i], weight = z[i];
        sgd_element(s, x[i], velocity, weight);
        y[i] = f32_canonical(velocity);
        z[i] = f32_canonical(weight);
      }
      break;
    case Opcode::kAdam:
      for (std::size_t i = 0; i < count; ++i) {
        float m = y[i], v = z[i], weight = w[i];
        adam_element(s, x[i], m, v, weight);
        y[i] = f32_canonical(m);
        z[i] = f32_canonical(v);
        w[i] = f32_canonical(weight);
      }
      break;
    case Opcode::kSum:
    case Opcode::kToBf16:
    case Opcode::kGemm:
      break;
  }
}

// The HLS kernel's block schedule, which the traffic the fast sw_emu path
// reports follows (the RTL works chunks of an array row instead): a
// descriptor is worked kVectorBlockElements elements at a time, and a
// transposed to_bf16 converts kTransposeRows rows together so that each
// column's bf16 values for them fill one beat.
inline constexpr uint32_t kVectorBlockElements = 256;
inline constexpr uint32_t kTransposeRows = kBeatBytes / kBf16Bytes;

// The RTL vector engine's lanes: the elements of an elementwise opcode it
// computes a cycle (an array narrower than this has one lane per column),
// a beat of fp32 values. A lane is Adam's whole dataflow, about 8,400 LUTs
// and 12 DSPs for UltraScale+ (hw/fpga/check.sh): 16 of them are a tenth
// of a U55C, and its 32x32 array still fits. The card's timing model takes
// the same number.
inline constexpr uint32_t kVectorLanes = kBeatBytes / 4;

// The sum opcode's arithmetic over host arrays: out[i] = ((+0 + term(0)[i])
// + term(1)[i]) + ... + term(terms - 1)[i] for i in [begin, end), where
// term(k) gives the k-th array (terms >= 1); a subnormal term reads as a zero, a tiny
// sum flushes, NaNs are canonical. The host's all-reduce, its col2im and
// the fast sw_emu engine sum through it. `out` may be term(0)'s array.
// The caller has set FlushToZero (vector_sum sets it).
template <class Term>
inline void vector_sum_flushed(std::size_t terms, const Term& term, std::size_t begin, std::size_t end,
                               float* out) {
  // Where the hardware flushes, only the last pass canonicalises: a NaN
  // stays a NaN through every add (only its payload may differ), and
  // nothing else is ever not canonical.
  auto canonical = [](float value, bool last) {
    return kOperandsFlushInHardware && !last ? value : numerics::f32_canonical(value);
  };
  // Blocks small enough that `out` stays in L1 across the passes.
  constexpr std::size_t kBlock = 2048;
  for (std::size_t block = begin; block < end; block += kBlock) {
    const std::size_t stop = std::min(end, block + kBlock);
    const float* first = term(0);  // may be out itself
    bool last = terms == 1;
    for (std::size_t i = block; i < stop; ++i) out[i] = canonical(vector_math::add(0.0f, first[i]), last);
    for (std::size_t k = 1; k < terms; ++k) {
      const float* __restrict in = term(k);
      float* __restrict acc = out;
      last = k + 1 == terms;
      if (last) {
        for (std::size_t i = block; i < stop; ++i) acc[i] = canonical(vector_math::add(acc[i], in[i]), true);
      } else {
        for (std::size_t i = block; i < stop; ++i) acc[i] = canonical(vector_math::add(acc[i], in[i]), false);
      }
    }
  }
}

template <class Term>
inline void vector_sum(std::size_t terms, const Term& term, std::size_t begin, std::size_t end, float* out) {
  const FlushToZero flush_to_zero;
  vector_sum_flushed(terms, term, begin, end, out);
}

// vector_block as the host runs it: on x86, the same loops compiled for
// AVX-512 or AVX2 where the processor has them (chosen once, in
// vector_ops.cpp).
// The bits are the same as the baseline build's, since every operation is
// an IEEE-754 one rounded under the same MXCSR whatever the vector width,
// and nothing is reordered or fused.
#ifndef __SYNTHESIS__
void vector_block_host(Opcode op, const VectorScalars& scalars, std::size_t count, const float* x, float* y,
                       float* z, float* w);

// The builds of vector_block this processor can run, the baseline first,
// for the tests that compare their bits.
struct VectorBlockBuild {
  const char* name;
  void (*run)(Opcode, const VectorScalars&, std::size_t, const float*, float*, float*, float*);
};
std::vector<VectorBlockBuild> vector_block_builds();
#endif

// An elementwise opcode over `n` elements of host arrays, reading and
// writing what the engine would (operands read as canonical values, outputs
// canonicalised as they are written): the host's run of the update a
// descriptor would make. Arrays the opcode does not use may be null; an
// output may be the same array as an input. Where the hardware reads
// subnormals as zeros the arrays are worked in place; elsewhere a block at
// a time through canonical copies.
inline void vector_apply(Opcode op, const VectorScalars& s, std::size_t n, const float* x, float* y, float* z,
                         float* w) {
  const FlushToZero flush_to_zero;
  if (kOperandsFlushInHardware) {
    vector_block_host(op, s, n, x, y, z, w);
    return;
  }
  constexpr std::size_t kBlock = 256;
  const VectorOperands operands = vector_operands(op);
  float* const arrays[3] = {y, z, w};
  const bool read[3] = {operands.read[1] && s.reads_y(op), operands.read[2], operands.read[3]};
  float block_x[kBlock], block[3][kBlock] = {};
  auto canonical_copy = [](const float* from, float* to, std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) to[i] = numerics::f32_canonical(from[i]);
  };
  for (std::size_t i0 = 0; i0 < n; i0 += kBlock) {
    const std::size_t count = std::min(kBlock, n - i0);
    canonical_copy(x + i0, block_x, count);
    for (int j = 0; j < 3; ++j)
      if (read[j]) canonical_copy(arrays[j] + i0, block[j], count);
    vector_block(op, s, count, block_x, block[0], block[1], block[2]);
    for (int j = 0; j < 3; ++j)
      if (operands.written[1 + j]) std::copy(block[j], block[j] + count, arrays[j] + i0);
  }
}

}  // namespace systole::spec
