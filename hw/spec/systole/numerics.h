// SPDX-License-Identifier: Apache-2.0
// The numerics contract of hw/spec/NUMERICS.md, as the operations every C++
// model (HLS kernel, fast sw_emu path) calls. The tests check these against a
// second implementation written separately from NUMERICS.md.
//
// These functions use the host's IEEE binary32 arithmetic for the rounding
// step and fix up what IEEE does differently (gradual underflow, NaN
// payloads). Their results do not depend on the thread's FTZ/DAZ mode: no
// subnormal ever reaches an operation, and a subnormal result is flushed
// whether or not the hardware already did.
#pragma once

#include <cstdint>
#include <cstring>

#if (defined(__x86_64__) || defined(__i386__)) && !defined(__SYNTHESIS__)
#include <xmmintrin.h>
#endif

namespace systole::numerics {

using bf16_t = uint16_t;  // bit pattern of a bfloat16

inline constexpr bf16_t kBf16CanonicalNan = 0x7FC0;
inline constexpr uint32_t kF32CanonicalNan = 0x7FC00000;

inline uint32_t f32_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

inline float f32_from_bits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

constexpr bool f32_bits_is_nan(uint32_t bits) { return (bits & 0x7FFFFFFFu) > 0x7F800000u; }

// An fp32 value as the hardware sees it entering an operation or leaving
// one: subnormal -> zero of the same sign, any NaN -> the canonical NaN.
// (Selects, not branches: loops of it vectorise.)
constexpr uint32_t f32_canonical_bits(uint32_t bits) {
  const uint32_t flushed = (bits & 0x7F800000u) == 0 ? bits & 0x80000000u : bits;
  return f32_bits_is_nan(bits) ? kF32CanonicalNan : flushed;
}

inline float f32_canonical(float value) { return f32_from_bits(f32_canonical_bits(f32_bits(value))); }

// bf16 -> fp32: exact widening; subnormal inputs read as zero of their sign.
// NaN payloads pass through (they only ever reach mul, which canonicalises).
inline float bf16_to_f32(bf16_t value) {
  uint32_t bits = uint32_t(value) << 16;
  if ((value & 0x7F80u) == 0) bits &= 0x80000000u;
  return f32_from_bits(bits);
}

// fp32 -> bf16: round to nearest, ties to even. A subnormal input becomes a
// zero of its sign (even one that would round up to the smallest normal);
// overflow rounds to +-Inf; any NaN becomes 0x7FC0 (sign dropped).
constexpr bf16_t f32_bits_to_bf16(uint32_t bits) {
  if (f32_bits_is_nan(bits)) return kBf16CanonicalNan;
  if ((bits & 0x7F800000u) == 0) return bf16_t((bits >> 16) & 0x8000u);
  const uint32_t lsb = (bits >> 16) & 1u;
  return bf16_t((bits + 0x7FFFu + lsb) >> 16);  // carries into Inf on overflow
}

inline bf16_t f32_to_bf16(float value) { return f32_bits_to_bf16(f32_bits(value)); }

// f32_to_bf16 of `count` values, written with selects instead of branches
// so that compilers vectorise it (the host runtime converts every operand
// of every product). Bit for bit f32_to_bf16 (tested over all 2^32 inputs).
inline void f32_to_bf16_array(const float* in, bf16_t* out, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) {
    uint32_t bits;
    std::memcpy(&bits, in + i, sizeof bits);
    const uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
    const uint32_t zero = (bits >> 16) & 0x8000u;
    const uint32_t finite = (bits & 0x7F800000u) == 0 ? zero : rounded;
    out[i] = bf16_t((bits & 0x7FFFFFFFu) > 0x7F800000u ? uint32_t(kBf16CanonicalNan) : finite);
  }
}

// bf16 x bf16 -> fp32. The 8-bit significands make the product exact in fp32
// unless it leaves the normal range: above it the product is +-Inf, below it
// a zero with the sign of the product. Inf x 0 and NaN give the canonical NaN.
inline float mul(bf16_t a, bf16_t b) { return f32_canonical(bf16_to_f32(a) * bf16_to_f32(b)); }

// fp32 + fp32, round to nearest even, subnormal sum -> zero of its sign,
// canonical NaN. Operands must already be canonical (they are: every value
// in the datapath comes out of mul, add or an input canonicalisation).
inline float add(float a, float b) { return f32_canonical(a + b); }

// ReLU as the output stage applies it: NaN stays NaN, -0 and negatives -> +0.
inline float relu(float value) {
  if (f32_bits_is_nan(f32_bits(value))) return value;
  return value > 0.0f ? value : 0.0f;
}

// x86's MXCSR flush-to-zero (FTZ) and denormals-are-zero (DAZ) bits, set
// on this thread for the guard's lifetime (elsewhere it does nothing). The
// fast GEMM's FMA runs under it, and the vector engine's arithmetic, which
// is x86's under this mode (vector_ops.h).
#if (defined(__x86_64__) || defined(__i386__)) && !defined(__SYNTHESIS__)
class FlushToZero {
 public:
  FlushToZero() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | kFtz | kDaz); }
  ~FlushToZero() { _mm_setcsr(saved_); }
  FlushToZero(const FlushToZero&) = delete;
  FlushToZero& operator=(const FlushToZero&) = delete;

 private:
  static constexpr unsigned kFtz = 1u << 15;
  static constexpr unsigned kDaz = 1u << 6;
  unsigned saved_;
};
#else
class FlushToZero {};
#endif

}  // namespace systole::numerics
