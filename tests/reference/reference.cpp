// SPDX-License-Identifier: Apache-2.0
// Reference numerics from NUMERICS.md, by field decoding and exact doubles.
#include "reference.h"

#include <cmath>
#include <cstring>

namespace systole::reference {
namespace {

constexpr double kMinNormal = 1.1754943508222875e-38;  // 2^-126
constexpr double kOverflow = 3.402823669209385e+38;    // 2^128
constexpr uint32_t kNan32 = 0x7FC00000;

struct Fields {
  bool negative;
  int exponent;  // biased
  uint32_t fraction;
};

Fields fields32(uint32_t bits) { return {(bits >> 31) != 0, int((bits >> 23) & 0xFF), bits & 0x7FFFFF}; }

bool is_nan32(uint32_t bits) {
  const Fields f = fields32(bits);
  return f.exponent == 255 && f.fraction != 0;
}
bool is_inf32(uint32_t bits) {
  const Fields f = fields32(bits);
  return f.exponent == 255 && f.fraction == 0;
}

uint32_t zero32(bool negative) { return negative ? 0x80000000u : 0u; }
uint32_t inf32(bool negative) { return negative ? 0xFF800000u : 0x7F800000u; }

// The exact value of a finite, normal-or-zero fp32 pattern.
double value32(uint32_t bits) {
  const Fields f = fields32(bits);
  if (f.exponent == 0) return f.negative ? -0.0 : 0.0;
  const double magnitude = std::ldexp(double(0x800000 | f.fraction), f.exponent - 127 - 23);
  return f.negative ? -magnitude : magnitude;
}

// fp32 bits of an exactly representable value, normal or zero, by building
// the fields (not by a float cast).
uint32_t pack32(double value) {
  const bool negative = std::signbit(value);
  const double magnitude = std::fabs(value);
  if (magnitude == 0.0) return zero32(negative);
  int exponent;
  const double significand = std::frexp(magnitude, &exponent);      // [0.5, 1)
  const uint32_t mantissa = uint32_t(std::ldexp(significand, 24));  // 24 bits
  const uint32_t biased = uint32_t(exponent - 1 + 127);
  return (negative ? 0x80000000u : 0u) | (biased << 23) | (mantissa & 0x7FFFFF);
}

// Magnitude of a non-negative bf16 pattern, treating the Inf pattern as 2^128
// (the value rounding compares against at the top of the range).
double magnitude16(uint16_t bits) {
  const int exponent = (bits >> 7) & 0xFF;
  if (exponent == 255) return kOverflow;
  if (exponent == 0) return std::ldexp(double(bits & 0x7F), -126 - 7);
  return std::ldexp(double(0x80 | (bits & 0x7F)), exponent - 127 - 7);
}

}  // namespace

uint32_t bf16_to_f32(uint16_t bf16) {
  const bool negative = (bf16 & 0x8000) != 0;
  const int exponent = (bf16 >> 7) & 0xFF;
  if (exponent == 0) return zero32(negative);
  return uint32_t(bf16) << 16;
}

uint16_t f32_to_bf16(uint32_t f32) {
  if (is_nan32(f32)) return 0x7FC0;
  const Fields f = fields32(f32);
  const uint16_t sign = f.negative ? 0x8000 : 0;
  if (f.exponent == 0) return sign;
  if (f.exponent == 255) return sign | 0x7F80;
  const double magnitude = std::fabs(value32(f32));
  const uint16_t below = uint16_t((f32 >> 16) & 0x7FFF);  // truncation
  const uint16_t above = uint16_t(below + 1);
  const double gap_below = magnitude - magnitude16(below);
  const double gap_above = magnitude16(above) - magnitude;
  uint16_t chosen;
  if (gap_below < gap_above)
    chosen = below;
  else if (gap_above < gap_below)
    chosen = above;
  else
    chosen = (below & 1) ? above : below;  // tie: the even pattern
  return sign | chosen;
}

uint32_t canonical(uint32_t f32) {
  if (is_nan32(f32)) return kNan32;
  const Fields f = fields32(f32);
  if (f.exponent == 0) return zero32(f.negative);
  return f32;
}

uint32_t mul(uint16_t a, uint16_t b) {
  const uint32_t fa = bf16_to_f32(a), fb = bf16_to_f32(b);
  const bool negative = ((a ^ b) & 0x8000) != 0;
  if (is_nan32(fa) || is_nan32(fb)) return kNan32;
  const bool zero_a = (fa & 0x7FFFFFFF) == 0, zero_b = (fb & 0x7FFFFFFF) == 0;
  if (is_inf32(fa) || is_inf32(fb)) {
    if (zero_a || zero_b) return kNan32;
    return inf32(negative);
  }
  // 8-bit significands: the product of the exact values is exact in double.
  const double product = value32(fa) * value32(fb);
  const double magnitude = std::fabs(product);
  if (magnitude == 0.0 || magnitude < kMinNormal) return zero32(negative);
  if (magnitude >= kOverflow) return inf32(negative);
  return pack32(product);  // at most 16 significant bits: fits fp32 exactly
}

uint32_t add(uint32_t a, uint32_t b) {
  if (is_nan32(a) || is_nan32(b)) return kNan32;
  if (is_inf32(a) && is_inf32(b)) return (a == b) ? a : kNan32;
  if (is_inf32(a)) return a;
  if (is_inf32(b)) return b;
  const double x = value32(a), y = value32(b);
  if (x == 0.0 && y == 0.0)  // IEEE: -0 only when both are -0
    return zero32(std::signbit(x) && std::signbit(y));
  // TwoSum: x + y == s + e exactly, with |e| at most half an ulp of s.
  const double s = x + y;
  const double s_minus_x = s - x;
  const double e = (x - (s - s_minus_x)) + (y - s_minus_x);
  if (s == 0.0) return 0;  // exact cancellation gives +0
  // Sums of fp32 values below 2^-126 are multiples of 2^-149 that fit in a
  // double, so here e == 0 and the flush needs no rounding.
  if (std::fabs(s) < kMinNormal) return zero32(std::signbit(s));
  int exponent;
  std::frexp(s, &exponent);
  const double ulp = std::ldexp(1.0, exponent - 24);  // fp32 ulp at |s|
  const double steps = std::floor(s / ulp);
  const double low = steps * ulp;
  double chosen = s;  // s on the fp32 grid: e is far below half an fp32 ulp
  if (low != s) {
    const double high = low + ulp;
    // (exact - low) - (high - exact) == (s - low) - (high - s) + 2e; the
    // first part is exact and at least as large as |2e| unless zero, so the
    // sign of the rounded sum is the sign of the exact one.
    const double difference = ((s - low) - (high - s)) + 2.0 * e;
    if (difference < 0)
      chosen = low;
    else if (difference > 0)
      chosen = high;
    else
      chosen = std::fmod(steps, 2.0) == 0.0 ? low : high;  // ties to even
  }
  if (std::fabs(chosen) >= kOverflow) return inf32(chosen < 0);
  return pack32(chosen);
}

uint32_t relu(uint32_t f32) {
  if (is_nan32(f32)) return kNan32;
  if ((f32 & 0x80000000u) || (f32 & 0x7FFFFFFFu) == 0) return 0;
  return f32;
}

void gemm(const spec::GemmDescriptor& d, uint32_t rows, std::vector<uint8_t>& memory) {
  auto load16 = [&](uint64_t address) {
    uint16_t v;
    std::memcpy(&v, memory.data() + address, 2);
    return v;
  };
  auto load32 = [&](uint64_t address) {
    uint32_t v;
    std::memcpy(&v, memory.data() + address, 4);
    return v;
  };
  const bool out_bf16 = (d.flags & spec::flag::kOutputBf16) != 0;
  const uint32_t c_bytes = out_bf16 ? 2 : 4;
  const uint32_t tiles = (d.k + rows - 1) / rows;
  std::vector<uint32_t> result(uint64_t(d.m) * d.n);
  for (uint32_t m = 0; m < d.m; ++m) {
    for (uint32_t n = 0; n < d.n; ++n) {
      const uint64_t c_address = d.c_addr + (uint64_t(m) * d.ldc + n) * c_bytes;
      uint32_t acc = 0;
      if (d.flags & spec::flag::kAccumulate)
        acc = out_bf16 ? bf16_to_f32(load16(c_address)) : canonical(load32(c_address));
      for (uint32_t t = 0; t < tiles; ++t) {
        uint32_t column_sum = 0;
        for (uint32_t r = 0; r < rows; ++r) {
          const uint32_t k = t * rows + r;
          const uint32_t product = k < d.k ? mul(load16(d.a_addr + (uint64_t(m) * d.lda + k) * 2),
                                                 load16(d.b_addr + (uint64_t(k) * d.ldb + n) * 2))
                                           : mul(0, 0);
          column_sum = add(column_sum, product);
        }
        acc = add(acc, column_sum);
      }
      if (d.flags & spec::flag::kBias) acc = add(acc, canonical(load32(d.bias_addr + uint64_t(n) * 4)));
      if (d.flags & spec::flag::kRelu) acc = relu(acc);
      result[uint64_t(m) * d.n + n] = acc;
    }
  }
  // Written after all reads, so that C is read as it was before the
  // descriptor (as the kernel does per N tile; C must not overlap inputs).
  for (uint32_t m = 0; m < d.m; ++m) {
    for (uint32_t n = 0; n < d.n; ++n) {
      const uint64_t c_address = d.c_addr + (uint64_t(m) * d.ldc + n) * c_bytes;
      const uint32_t value = result[uint64_t(m) * d.n + n];
      if (out_bf16) {
        const uint16_t out = f32_to_bf16(value);
        std::memcpy(memory.data() + c_address, &out, 2);
      } else {
        std::memcpy(memory.data() + c_address, &value, 4);
      }
    }
  }
}

namespace {

// An exact nonzero magnitude significand * 2^exponent, plus `sticky` when
// the true value lies strictly between that and the next integer
// significand: rounded by the vector engine's rules (to 24 bits with an
// unbounded exponent, then a zero if that is below 2^-126). The significand
// must hold at least 26 bits when sticky is set.
uint32_t round32(bool negative, unsigned __int128 significand, int exponent, bool sticky) {
  int length = 0;
  for (unsigned __int128 s = significand; s != 0; s >>= 1) ++length;
  int top = length - 1 + exponent;  // value in [2^top, 2^(top + 1))
  const int shift = length - 24;
  uint64_t kept;
  if (shift > 0) {
    kept = uint64_t(significand >> shift);
    const unsigned __int128 rest = significand & ((unsigned __int128)(1) << shift) - 1;
    const unsigned __int128 half = (unsigned __int128)(1) << (shift - 1);
    if (rest > half || (rest == half && (sticky || (kept & 1)))) ++kept;
  } else {
    kept = uint64_t(significand) << -shift;  // exact (sticky needs 26 bits)
  }
  if (kept == (uint64_t(1) << 24)) kept >>= 1, ++top;
  if (top < -126) return zero32(negative);  // tiny after rounding
  if (top > 127) return inf32(negative);
  return (negative ? 0x80000000u : 0u) | uint32_t(top + 127) << 23 | uint32_t(kept & 0x7FFFFF);
}

// A normal fp32 value as significand * 2^exponent (24-bit significand).
struct Exact {
  uint32_t significand;
  int exponent;
};
Exact exact32(uint32_t bits) {
  const Fields f = fields32(bits);
  return {0x800000u | f.fraction, f.exponent - 127 - 23};
}

bool is_zero32(uint32_t bits) { return (bits & 0x7FFFFFFF) == 0; }
bool sign32(uint32_t bits) { return (bits >> 31) != 0; }

}  // namespace

uint32_t fmul(uint32_t a, uint32_t b) {
  const bool negative = sign32(a) != sign32(b);
  if (is_nan32(a) || is_nan32(b)) return kNan32;
  if (is_inf32(a) || is_inf32(b)) return (is_zero32(a) || is_zero32(b)) ? kNan32 : inf32(negative);
  if (is_zero32(a) || is_zero32(b)) return zero32(negative);
  const Exact x = exact32(a), y = exact32(b);
  return round32(negative, (unsigned __int128)(x.significand) * y.significand, x.exponent + y.exponent,
                 false);
}

uint32_t fsub(uint32_t a, uint32_t b) { return add(a, is_nan32(b) ? b : b ^ 0x80000000u); }

uint32_t fdiv(uint32_t a, uint32_t b) {
  const bool negative = sign32(a) != sign32(b);
  if (is_nan32(a) || is_nan32(b)) return kNan32;
  if (is_inf32(a)) return is_inf32(b) ? kNan32 : inf32(negative);
  if (is_inf32(b)) return zero32(negative);
  if (is_zero32(b)) return is_zero32(a) ? kNan32 : inf32(negative);
  if (is_zero32(a)) return zero32(negative);
  const Exact x = exact32(a), y = exact32(b);
  // 2^60 * Mx / My has at least 36 bits; the remainder decides the sticky bit.
  const unsigned __int128 numerator = (unsigned __int128)(x.significand) << 60;
  const unsigned __int128 quotient = numerator / y.significand;
  const bool sticky = numerator % y.significand != 0;
  return round32(negative, quotient, x.exponent - y.exponent - 60, sticky);
}

uint32_t fsqrt(uint32_t a) {
  if (is_nan32(a)) return kNan32;
  if (is_zero32(a)) return a;  // sqrt(-0) = -0
  if (sign32(a)) return kNan32;
  if (is_inf32(a)) return a;
  Exact x = exact32(a);
  // sqrt(M * 2^e) = sqrt(M * 2^(2s) * 2^(e - 2s)): scale M by an even shift
  // that leaves an even exponent and about 100 bits, then take the integer
  // square root bit by bit.
  int shift = 76;
  if ((x.exponent - shift) % 2 != 0) ++shift;
  const unsigned __int128 n = (unsigned __int128)(x.significand) << shift;
  unsigned __int128 root = 0;
  for (int bit = 63; bit >= 0; --bit) {
    const unsigned __int128 candidate = root | ((unsigned __int128)(1) << bit);
    if (candidate * candidate <= n) root = candidate;
  }
  return round32(false, root, (x.exponent - shift) / 2, root * root != n);
}

void vector(const spec::VectorDescriptor& d, std::vector<uint8_t>& memory) {
  using spec::Opcode;
  auto load = [&](uint64_t address) {
    uint32_t v;
    std::memcpy(&v, memory.data() + address, 4);
    return canonical(v);
  };
  auto scalar = [](float value) {
    uint32_t bits;
    std::memcpy(&bits, &value, 4);
    return canonical(bits);
  };
  const uint32_t alpha = scalar(d.alpha), beta = scalar(d.beta), gamma = scalar(d.gamma),
                 delta = scalar(d.delta);
  const uint32_t one = 0x3F800000;
  const Opcode op = Opcode(d.opcode);
  if (op == Opcode::kToBf16) {
    // x and z never overlap (validation), so the order of writes is free.
    const bool transpose = (d.flags & spec::vector_flag::kTranspose) != 0;
    for (uint64_t r = 0; r < d.rows; ++r)
      for (uint64_t c = 0; c < d.n; ++c) {
        const uint16_t value = f32_to_bf16(load(d.x_addr + 4 * (r * d.stride + c)));
        const uint64_t at = transpose ? c * d.rows + r : r * d.n + c;
        std::memcpy(memory.data() + d.z_addr + 2 * at, &value, 2);
      }
    return;
  }
  // Every result first, then the writes: an output that is an input's
  // buffer reads the input as it was.
  std::vector<std::pair<uint64_t, uint32_t>> writes;
  for (uint64_t i = 0; i < d.n; ++i) {
    const uint64_t xi = d.x_addr + 4 * i, yi = d.y_addr + 4 * i, zi = d.z_addr + 4 * i, wi = d.w_addr + 4 * i;
    switch (op) {
      case Opcode::kAxpby:
        writes.push_back(
            {yi, beta == 0 ? fmul(alpha, load(xi)) : add(fmul(alpha, load(xi)), fmul(beta, load(yi)))});
        break;
      case Opcode::kMul:
        writes.push_back({zi, fmul(load(xi), load(yi))});
        break;
      case Opcode::kRelu:
        writes.push_back({zi, relu(load(xi))});
        break;
      case Opcode::kReluGrad: {
        const uint32_t y = load(yi);
        const bool positive = !is_nan32(y) && !sign32(y) && !is_zero32(y);
        writes.push_back({zi, positive ? load(xi) : 0u});
        break;
      }
      case Opcode::kSum: {
        uint32_t s = 0;
        for (uint64_t r = 0; r < d.rows; ++r) s = add(s, load(d.x_addr + 4 * (r * d.stride + i)));
        writes.push_back({zi, s});
        break;
      }
      case Opcode::kSgd: {
        const uint32_t g = load(xi);
        const uint32_t v = fsub(fmul(beta, load(yi)), fmul(alpha, g));
        const uint32_t step =
            (d.flags & spec::vector_flag::kNesterov) ? fsub(fmul(beta, v), fmul(alpha, g)) : v;
        writes.push_back({yi, v});
        writes.push_back({zi, add(load(zi), step)});
        break;
      }
      case Opcode::kAdam: {
        const uint32_t g = load(xi);
        const uint32_t m = add(fmul(beta, load(yi)), fmul(fsub(one, beta), g));
        const uint32_t v = add(fmul(gamma, load(zi)), fmul(fmul(fsub(one, gamma), g), g));
        writes.push_back({yi, m});
        writes.push_back({zi, v});
        writes.push_back({wi, fsub(load(wi), fdiv(fmul(alpha, m), add(fsqrt(v), delta)))});
        break;
      }
      case Opcode::kToBf16:
      case Opcode::kGemm:
        break;
    }
  }
  for (const auto& [address, value] : writes) std::memcpy(memory.data() + address, &value, 4);
}

}  // namespace systole::reference
