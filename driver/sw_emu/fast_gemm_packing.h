// SPDX-License-Identifier: Apache-2.0
// How the fast GEMM's operands become its micro-kernels' panels
// (fast_gemm.cpp's loop nest calls these): bf16 values in device memory
// decoded to fp32 and packed kWidth-interleaved, K tile by K tile, with
// each panel tile's exponent range, from which fma_safe decides where FMA
// is exact; and the exponent scan of a left operand the kernel reads in
// place. Internal to the sw_emu backend; the packing is x86-64 only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "fast_gemm.h"
#include "systole/detail/transpose8.h"
#include "systole/numerics.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace systole::sw_emu::packing {

using numerics::bf16_t;

inline bf16_t load_bf16(const uint8_t* p) {
  bf16_t value;
  std::memcpy(&value, p, sizeof value);
  return value;
}

// Biased exponents of a panel's values: the smallest over the nonzero ones
// (255 when all are zero) and the largest (255 when any is Inf or NaN).
// Branchless, because every packed element passes through it.
struct ExponentRange {
  uint32_t min_nonzero = 255;
  uint32_t max = 0;

  void add(bf16_t bits) {
    const uint32_t biased = (bits >> 7) & 0xFF;
    min_nonzero = std::min(min_nonzero, biased == 0 ? 255u : biased);
    max = std::max(max, biased);
  }
};

// Every product of a value from `a` and one from `w` lies in the fp32 normal
// range (or is an exact zero), so FMA rounds exactly like mul-then-add:
// unbiased exponents ea + ew within [-126, 126] for all nonzero pairs.
inline bool fma_safe(const ExponentRange& a, const ExponentRange& w) {
  if (a.max == 255 || w.max == 255) return false;                 // Inf or NaN
  if (a.min_nonzero == 255 || w.min_nonzero == 255) return true;  // all zero
  const int lowest = int(a.min_nonzero) + int(w.min_nonzero) - 254;
  const int highest = int(a.max) + int(w.max) - 254;
  return lowest >= -126 && highest <= 126;
}

#if defined(__x86_64__)

// The K rows of tile t that hold data: the array pads the last tile with
// zero rows, whose products (+0 x +0) leave a column sum as it is (a sum
// from +0 is never -0), so the fast engine stops before them.
inline uint32_t tile_depth(const FastGemmArgs& args, uint32_t t) {
  return std::min(args.k_tile, args.k - t * args.k_tile);
}

// Decodes 8 bf16 values to fp32 (subnormals as zeros of their sign, which
// DAZ would make of them anyway) and folds their biased exponents into the
// running minimum over nonzero values and the running maximum.
__attribute__((target("avx2"))) inline __m256i decode8(__m128i bf16x8, __m256i& min_nonzero, __m256i& max) {
  const __m256i raw = _mm256_cvtepu16_epi32(bf16x8);
  const __m256i exponent = _mm256_and_si256(_mm256_srli_epi32(raw, 7), _mm256_set1_epi32(0xFF));
  const __m256i zero = _mm256_cmpeq_epi32(exponent, _mm256_setzero_si256());
  const __m256i bits = _mm256_slli_epi32(raw, 16);
  min_nonzero = _mm256_min_epu32(min_nonzero, _mm256_blendv_epi8(exponent, _mm256_set1_epi32(255), zero));
  max = _mm256_max_epu32(max, exponent);
  return _mm256_blendv_epi8(bits, _mm256_and_si256(bits, _mm256_set1_epi32(int(0x80000000u))), zero);
}

__attribute__((target("avx2"))) inline __m256i decode8(const uint8_t* in, __m256i& min_nonzero,
                                                       __m256i& max) {
  return decode8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in)), min_nonzero, max);
}

__attribute__((target("avx2"))) inline uint32_t horizontal(__m256i v, bool take_min) {
  alignas(32) uint32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), v);
  uint32_t result = lanes[0];
  for (uint32_t lane : lanes) result = take_min ? std::min(result, lane) : std::max(result, lane);
  return result;
}

// A panel tile's exponent range from vector lanes, merged with the scalar
// values' range.
__attribute__((target("avx2"))) inline ExponentRange merged(ExponentRange range, __m256i min_nonzero,
                                                            __m256i max) {
  range.min_nonzero = std::min(range.min_nonzero, horizontal(min_nonzero, true));
  range.max = std::max(range.max, horizontal(max, false));
  return range;
}

// `range` widened by a scan's folds: the smallest magnitude less 0x80
// (wrapping in 16 bits) and the largest magnitude.
inline ExponentRange with_folds(ExponentRange range, uint32_t lowest, uint32_t highest) {
  if (lowest < 0xFF80)  // some value has a nonzero exponent
    range.min_nonzero = std::min(range.min_nonzero, (lowest + 0x80) >> 7);
  range.max = std::max(range.max, highest >> 7);
  return range;
}

// The exponent range of `count` consecutive bf16 values folded into
// `range`, 64 at a time in two independent folds; the last few through
// masked loads, whose +0s change neither bound. On a value's magnitude
// bits (exponent, then mantissa), a nonzero exponent means a magnitude of
// at least 0x80, so
// the magnitude less 0x80, wrapping in 16 bits, puts zeros and subnormals
// above every other: its minimum gives the smallest nonzero exponent, the
// largest magnitude the largest. For the AVX-512 kernels.
__attribute__((target("avx512f,avx512bw"))) inline ExponentRange scan_range(const uint8_t* in, uint64_t count,
                                                                            ExponentRange range) {
  const __m512i magnitude = _mm512_set1_epi16(0x7FFF), smallest_normal = _mm512_set1_epi16(0x80);
  __m512i low[2] = {_mm512_set1_epi16(-1), _mm512_set1_epi16(-1)};  // magnitude - 0x80
  __m512i high[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
  auto fold = [&](int f, __m512i bits) __attribute__((target("avx512f,avx512bw"), always_inline)) {
    const __m512i m = _mm512_and_si512(bits, magnitude);
    low[f] = _mm512_min_epu16(low[f], _mm512_sub_epi16(m, smallest_normal));
    high[f] = _mm512_max_epu16(high[f], m);
  };
  uint64_t i = 0;
  for (; i + 64 <= count; i += 64) {
    fold(0, _mm512_loadu_si512(in + i * sizeof(bf16_t)));
    fold(1, _mm512_loadu_si512(in + (i + 32) * sizeof(bf16_t)));
  }
  for (int f = 0; i < count; i += 32, ++f) {
    const uint64_t left = std::min<uint64_t>(32, count - i);
    const __mmask32 lanes = left == 32 ? ~__mmask32(0) : __mmask32((uint64_t(1) << left) - 1);
    fold(f, _mm512_maskz_loadu_epi16(lanes, in + i * sizeof(bf16_t)));
  }
  // Across lanes, in 32-bit lanes of the 16-bit values (zero-extended).
  const __m512i low16 = _mm512_min_epu16(low[0], low[1]), high16 = _mm512_max_epu16(high[0], high[1]);
  const __m512i even_mask = _mm512_set1_epi32(0xFFFF);
  const uint32_t lowest = std::min(_mm512_reduce_min_epu32(_mm512_and_si512(low16, even_mask)),
                                   _mm512_reduce_min_epu32(_mm512_srli_epi32(low16, 16)));
  const uint32_t highest = std::max(_mm512_reduce_max_epu32(_mm512_and_si512(high16, even_mask)),
                                    _mm512_reduce_max_epu32(_mm512_srli_epi32(high16, 16)));
  return with_folds(range, lowest, highest);
}

// scan_range in AVX2: 32 values at a time, the last few through a copy
// padded with +0s; the lanes folded by PHMINPOSUW (the largest as the
// smallest complement).
__attribute__((target("avx2"))) inline ExponentRange scan_range_avx2(const uint8_t* in, uint64_t count,
                                                                     ExponentRange range) {
  const __m256i magnitude = _mm256_set1_epi16(0x7FFF), smallest_normal = _mm256_set1_epi16(0x80);
  __m256i low[2] = {_mm256_set1_epi16(-1), _mm256_set1_epi16(-1)};  // magnitude - 0x80
  __m256i high[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
  auto fold = [&](int f, const uint8_t* at) __attribute__((target("avx2"), always_inline)) {
    const __m256i m = _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(at)), magnitude);
    low[f] = _mm256_min_epu16(low[f], _mm256_sub_epi16(m, smallest_normal));
    high[f] = _mm256_max_epu16(high[f], m);
  };
  uint64_t i = 0;
  for (; i + 32 <= count; i += 32) {
    fold(0, in + i * sizeof(bf16_t));
    fold(1, in + (i + 16) * sizeof(bf16_t));
  }
  if (i < count) {
    alignas(32) bf16_t rest[32] = {};
    std::memcpy(rest, in + i * sizeof(bf16_t), (count - i) * sizeof(bf16_t));
    fold(0, reinterpret_cast<const uint8_t*>(rest));
    fold(1, reinterpret_cast<const uint8_t*>(rest + 16));
  }
  auto smallest = [](__m256i v) __attribute__((target("avx2"), always_inline)) {
    const __m128i both = _mm_min_epu16(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    return uint32_t(_mm_extract_epi16(_mm_minpos_epu16(both), 0));
  };
  const __m256i low16 = _mm256_min_epu16(low[0], low[1]), high16 = _mm256_max_epu16(high[0], high[1]);
  const uint32_t highest = 0xFFFF - smallest(_mm256_xor_si256(high16, _mm256_set1_epi16(-1)));
  return with_folds(range, smallest(low16), highest);
}

// One of the loop nest's two operands as stored in device memory: value
// (i, k) at bf16 element i * i_stride + k * k_stride from `base`, where i
// runs over the rows of C the operand gives (A's rows; B's columns, or A's
// rows when the nest computes C's transpose) and one of the strides is 1.
// i past `extent` packs as +0.
struct Source {
  const uint8_t* base;
  uint64_t i_stride, k_stride;
  uint32_t extent;

  const uint8_t* at(uint64_t i, uint64_t k) const {
    return base + (i * i_stride + k * k_stride) * sizeof(bf16_t);
  }
};

// Stores the first kLanes lanes of `values` at `out`. Fewer than eight
// (a panel narrower than a vector) spill the rest into the next K's
// lanes, which the packing writes after them, except at a panel's `last`
// K, whose spill would reach past the panel: those lanes go one by one.
// (A masked store would do, but costs some ten times a store on AMD's
// Zen cores.)
template <uint32_t kLanes>
__attribute__((target("avx2"), always_inline)) inline void store_lanes(float* out, __m256 values, bool last) {
  if (kLanes == 8 || !last) {
    _mm256_storeu_ps(out, values);
    return;
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, values);
  std::memcpy(out, lanes, kLanes * sizeof(float));
}

// Packs i in [i0, i0 + kWidth) of a source whose k is contiguous (A, or B
// read as the transpose's right operand), all K tiles, kWidth-interleaved:
// out[(t * tile + kk) * kWidth + r]. K past the end is not written: the
// micro-kernel stops at the last real K (tile_depth). Eight K at a time,
// each group of eight i is decoded and transposed in registers.
template <uint32_t kWidth>
__attribute__((target("avx2"))) void pack_across(const FastGemmArgs& args, const Source& source, uint32_t i0,
                                                 uint32_t k_tiles, float* out, ExponentRange* ranges) {
  static_assert(kWidth < 8 || kWidth % 8 == 0, "a group of eight lanes must not spill into the next");
  constexpr uint32_t kGroups = (kWidth + 7) / 8, kLanes = kWidth < 8 ? kWidth : 8;
  const uint32_t tile = args.k_tile;
  const uint32_t valid = i0 < source.extent ? std::min(kWidth, source.extent - i0) : 0;
  // Each store's spare lanes (kWidth < 8) land where the next one writes;
  // the panel's last store leaves them out.
  for (uint32_t t = 0; t < k_tiles; ++t) {
    const uint32_t end = t * tile + tile_depth(args, t);
    ExponentRange range;
    __m256i min_nonzero = _mm256_set1_epi32(255), max = _mm256_setzero_si256();
    uint32_t k = t * tile;
    for (; k + 8 <= end; k += 8)
      for (uint32_t g = 0; g < kGroups; ++g) {
        __m256 v[8];
        for (uint32_t r = 0; r < 8; ++r) {
          const uint32_t i = g * 8 + r;
          v[r] = i < valid ? _mm256_castsi256_ps(decode8(source.at(i0 + i, k), min_nonzero, max))
                           : _mm256_setzero_ps();
        }
        detail::transpose8x8(v);  // v[kk]: K = k + kk of the group's eight i
        float* at = out + uint64_t(k) * kWidth + g * 8;
        for (uint32_t kk = 0; kk < 7; ++kk) _mm256_storeu_ps(at + kk * kWidth, v[kk]);
        store_lanes<kLanes>(at + 7 * kWidth, v[7], k + 8 == args.k);
      }
    for (; k < end; ++k)
      for (uint32_t i = 0; i < kWidth; ++i) {
        const bf16_t bits = i < valid ? load_bf16(source.at(i0 + i, k)) : 0;
        range.add(bits);
        out[uint64_t(k) * kWidth + i] = numerics::bf16_to_f32(bits);
      }
    ranges[t] = merged(range, min_nonzero, max);
  }
}

// Packs i in [i0, i0 + kWidth) of a source whose i is contiguous (B, or A
// read as the transpose's left operand), laid out as pack_across's.
template <uint32_t kWidth>
__attribute__((target("avx2"))) void pack_along(const FastGemmArgs& args, const Source& source, uint32_t i0,
                                                uint32_t k_tiles, float* out, ExponentRange* ranges) {
  static_assert(kWidth < 8 || kWidth % 8 == 0, "a row is whole groups of eight, or fewer than eight");
  constexpr uint32_t kGroups = (kWidth + 7) / 8, kLanes = kWidth < 8 ? kWidth : 8;
  const uint32_t tile = args.k_tile;
  const uint32_t valid = i0 < source.extent ? std::min(kWidth, source.extent - i0) : 0;
  // A short row (the last panel's) is read in whole groups of eight where
  // the bytes past it still lie inside the operand (a later row follows),
  // and its lanes past the row are cleared; only the last few rows go
  // through a copy. Groups wholly past the row are +0.
  const uint32_t groups_read = (valid + 7) / 8, lanes_read = groups_read * 8;
  __m128i keep[kGroups];
  for (uint32_t g = 0; g < kGroups; ++g)
    keep[g] = _mm_cmpgt_epi16(_mm_set1_epi16(short(std::min(8u, valid - std::min(valid, g * 8)))),
                              _mm_setr_epi16(0, 1, 2, 3, 4, 5, 6, 7));
  alignas(16) bf16_t padded[kGroups * 8] = {};  // a short row, then +0s
  for (uint32_t t = 0; t < k_tiles; ++t) {
    __m256i min_nonzero = _mm256_set1_epi32(255), max = _mm256_setzero_si256();
    for (uint32_t k = t * tile; k < t * tile + tile_depth(args, t); ++k) {
      const uint8_t* row = source.at(i0, k);
      const bool copy = valid < lanes_read && uint64_t(args.k - 1 - k) * source.k_stride < lanes_read - valid;
      if (copy) {
        std::memcpy(padded, row, valid * sizeof(bf16_t));
        row = reinterpret_cast<const uint8_t*>(padded);
      }
      float* packed = out + uint64_t(k) * kWidth;
      for (uint32_t g = 0; g < kGroups; ++g) {
        __m256i values = _mm256_setzero_si256();
        if (g < groups_read) {
          const __m128i bits =
              _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + g * 8 * sizeof(bf16_t)));
          values = decode8(copy ? bits : _mm_and_si128(bits, keep[g]), min_nonzero, max);
        }
        store_lanes<kLanes>(packed + g * 8, _mm256_castsi256_ps(values), k + 1 == args.k);
      }
    }
    ranges[t] = merged(ExponentRange(), min_nonzero, max);
  }
}

// pack_along for the AVX-512 kernels' panels, 32 or 16 wide: a row's
// values in one masked load (lanes past the row read nothing, so no copy
// is needed near the operand's end), decoded 16 at a time. A 32-wide panel
// of 16 columns or fewer fills only each row's first 16 lanes: the 8 x 32
// kernel computes only those for it.
template <uint32_t kWidth>
__attribute__((target("avx512f,avx512bw"))) void pack_along_avx512(const FastGemmArgs& args,
                                                                   const Source& source, uint32_t i0,
                                                                   uint32_t k_tiles, float* out,
                                                                   ExponentRange* ranges) {
  static_assert(kWidth == 16 || kWidth == 32, "whole 16-lane vectors, at most one load's 32 values");
  const uint32_t tile = args.k_tile;
  const uint32_t valid = i0 < source.extent ? std::min(kWidth, source.extent - i0) : 0;
  const __mmask32 lanes = __mmask32((uint64_t(1) << valid) - 1);
  const __m512i exponent_bits = _mm512_set1_epi32(0xFF), sign = _mm512_set1_epi32(int(0x80000000u));
  for (uint32_t t = 0; t < k_tiles; ++t) {
    __m512i min_nonzero = exponent_bits, max = _mm512_setzero_si512();
    // 16 bf16 values as fp32 bits (subnormals as zeros of their sign), their
    // exponents folded into the range.
    auto decode16 = [&](__m256i bf16x16) __attribute__((target("avx512f,avx512bw"))) {
      const __m512i raw = _mm512_cvtepu16_epi32(bf16x16);
      const __m512i exponent = _mm512_and_si512(_mm512_srli_epi32(raw, 7), exponent_bits);
      const __mmask16 nonzero = _mm512_test_epi32_mask(exponent, exponent);
      min_nonzero = _mm512_mask_min_epu32(min_nonzero, nonzero, min_nonzero, exponent);
      max = _mm512_max_epu32(max, exponent);
      const __m512i bits = _mm512_slli_epi32(raw, 16);
      return _mm512_mask_and_epi32(bits, __mmask16(~nonzero), bits, sign);
    };
    const uint32_t end = t * tile + tile_depth(args, t);
    if (valid <= 16) {
      for (uint32_t k = t * tile; k < end; ++k)
        _mm512_storeu_si512(
            out + uint64_t(k) * kWidth,
            decode16(_mm512_castsi512_si256(_mm512_maskz_loadu_epi16(lanes, source.at(i0, k)))));
    } else {
      for (uint32_t k = t * tile; k < end; ++k) {
        const __m512i row = _mm512_maskz_loadu_epi16(lanes, source.at(i0, k));
        float* packed = out + uint64_t(k) * kWidth;
        _mm512_storeu_si512(packed, decode16(_mm512_castsi512_si256(row)));
        _mm512_storeu_si512(packed + 16, decode16(_mm512_extracti64x4_epi64(row, 1)));
      }
    }
    ranges[t] = ExponentRange{_mm512_reduce_min_epu32(min_nonzero), _mm512_reduce_max_epu32(max)};
  }
}

// Packs panel i0.. of `source` for Kernel, kWidth wide.
template <class Kernel, uint32_t kWidth>
void pack(const FastGemmArgs& args, const Source& source, uint32_t i0, uint32_t k_tiles, float* out,
          ExponentRange* ranges) {
  if (source.k_stride == 1)
    pack_across<kWidth>(args, source, i0, k_tiles, out, ranges);
  else if constexpr (Kernel::kAvx512 && kWidth % 16 == 0)
    pack_along_avx512<kWidth>(args, source, i0, k_tiles, out, ranges);
  else
    pack_along<kWidth>(args, source, i0, k_tiles, out, ranges);
}

// For left panels the micro-kernel reads in place (rows [i0, i0 + rows)
// of A): one exponent range over all their K, given to each panel's K
// tiles (`ranges`, k_tiles per panel).
template <class Kernel>
void range_in_place(const FastGemmArgs& args, const Source& source, uint32_t i0, uint32_t rows,
                    uint32_t panel_rows, uint32_t k_tiles, ExponentRange* ranges) {
  const auto scan = Kernel::kAvx512 ? scan_range : scan_range_avx2;
  const uint32_t valid = i0 < source.extent ? std::min(rows, source.extent - i0) : 0;
  ExponentRange range;
  if (source.i_stride == args.k)  // the rows lie end to end
    range = scan(source.at(i0, 0), uint64_t(valid) * args.k, range);
  else
    for (uint32_t r = 0; r < valid; ++r) range = scan(source.at(i0 + r, 0), args.k, range);
  std::fill(ranges, ranges + std::size_t(rows / panel_rows) * k_tiles, range);
}

#endif  // defined(__x86_64__)

}  // namespace systole::sw_emu::packing
