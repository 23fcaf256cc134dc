// SPDX-License-Identifier: Apache-2.0
// The fast GEMM's micro-kernels and its vector output stage (fast_gemm.cpp's
// loop nest calls them): one struct per instruction set, with its block
// shape (kMr rows x kNr columns of C) and what it can do. Internal to the
// sw_emu backend; x86-64 only.
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "fast_gemm.h"
#include "systole/numerics.h"

namespace systole::sw_emu::kernels {

using numerics::bf16_t;

// initial_accumulator for fp32 C's row m, columns n..n+7, of a GEMM that
// accumulates: C with NaN canonical and subnormals as zeros of their sign.
__attribute__((target("avx2"))) inline void load_accumulators8(const FastGemmArgs& args, uint32_t m,
                                                               uint32_t n, float* accumulators) {
  const __m256i bits = _mm256_loadu_si256(
      reinterpret_cast<const __m256i*>(args.c + (uint64_t(m) * args.ldc + n) * sizeof(float)));
  const __m256i magnitude = _mm256_and_si256(bits, _mm256_set1_epi32(0x7FFFFFFF));
  const __m256i subnormal =
      _mm256_cmpeq_epi32(_mm256_and_si256(bits, _mm256_set1_epi32(0x7F800000)), _mm256_setzero_si256());
  const __m256i nan = _mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32(0x7F800000));
  __m256i value =
      _mm256_blendv_epi8(bits, _mm256_and_si256(bits, _mm256_set1_epi32(int(0x80000000u))), subnormal);
  value = _mm256_blendv_epi8(value, _mm256_set1_epi32(int(numerics::kF32CanonicalNan)), nan);
  _mm256_storeu_ps(accumulators, _mm256_castsi256_ps(value));
}

// store_output's arithmetic for 8 finished accumulators of an fp32 C's
// row, columns n..n+7: bias, ReLU (NaN kept, -0 and negatives to +0),
// canonical NaN. Runs under FTZ and DAZ, which flush a subnormal bias or
// sum to the zero of its sign as the contract's add does.
__attribute__((target("avx2"))) inline __m256 finish8(const FastGemmArgs& args, uint32_t n, __m256 value) {
  if (args.flags & spec::flag::kBias)
    value = _mm256_add_ps(value, _mm256_loadu_ps(reinterpret_cast<const float*>(args.bias) + n));
  if (args.flags & spec::flag::kRelu) {
    const __m256 keep = _mm256_or_ps(_mm256_cmp_ps(value, _mm256_setzero_ps(), _CMP_GT_OQ),
                                     _mm256_cmp_ps(value, value, _CMP_UNORD_Q));
    value = _mm256_and_ps(value, keep);
  }
  const __m256 canonical_nan = _mm256_castsi256_ps(_mm256_set1_epi32(int(numerics::kF32CanonicalNan)));
  return _mm256_blendv_ps(value, canonical_nan, _mm256_cmp_ps(value, value, _CMP_UNORD_Q));
}

// store_output for 8 finished accumulators of fp32 row m, columns n..n+7.
__attribute__((target("avx2"))) inline void store_output8(const FastGemmArgs& args, uint32_t m, uint32_t n,
                                                          const float* accumulators) {
  _mm256_storeu_ps(reinterpret_cast<float*>(args.c + (uint64_t(m) * args.ldc + n) * sizeof(float)),
                   finish8(args, n, _mm256_loadu_ps(accumulators)));
}

// A block's results written straight into an fp32 C at the product's last
// K tile: the block's rows are C's rows m0.., its columns C's columns n0..,
// of which `rows` and `cols` lie inside C.
struct Finish {
  const FastGemmArgs* args;
  uint32_t m0, n0, rows, cols;
};

// A micro-kernel computes one K tile for a block of C: column sums from +0
// in K order, then accumulator + sums, with +0 for the accumulator when
// `from_zero` (the first K tile of a product that does not accumulate; the
// accumulator block is then not read). `a` is packed kMr-interleaved, `w`
// kNr-interleaved. With `finish`, the sums go through the output stage
// into C instead of into the accumulator block. kFused multiplies and adds
// in one FMA, which the caller allows only where every product is exact.

// AVX2: 6 rows x 16 columns in 12 ymm registers. It finishes whole blocks
// only; the others go through the accumulator block.
struct Avx2Kernel {
  static constexpr uint32_t kMr = 6, kNr = 16;
  static constexpr bool kFinishesPartialBlocks = false;
  static constexpr bool kReadsLeftInPlace = false;

  template <bool kFused>
  __attribute__((target("avx2,fma"))) static void run(const float* a, const float* w, uint32_t depth,
                                                      float* accumulator, bool from_zero,
                                                      const Finish* finish) {
    __m256 sum[kMr][2];
#pragma GCC unroll 6
    for (uint32_t r = 0; r < kMr; ++r) sum[r][0] = sum[r][1] = _mm256_setzero_ps();
    for (uint32_t k = 0; k < depth; ++k) {
      const __m256 w0 = _mm256_loadu_ps(w);
      const __m256 w1 = _mm256_loadu_ps(w + 8);
#pragma GCC unroll 6
      for (uint32_t r = 0; r < kMr; ++r) {
        const __m256 ar = _mm256_broadcast_ss(a + r);
        if constexpr (kFused) {
          sum[r][0] = _mm256_fmadd_ps(ar, w0, sum[r][0]);
          sum[r][1] = _mm256_fmadd_ps(ar, w1, sum[r][1]);
        } else {
          sum[r][0] = _mm256_add_ps(sum[r][0], _mm256_mul_ps(ar, w0));
          sum[r][1] = _mm256_add_ps(sum[r][1], _mm256_mul_ps(ar, w1));
        }
      }
      a += kMr;
      w += kNr;
    }
#pragma GCC unroll 6
    for (uint32_t r = 0; r < kMr; ++r) {
      float* row = accumulator + r * kNr;
      const __m256 zero = _mm256_setzero_ps();
      const __m256 lo = _mm256_add_ps(from_zero ? zero : _mm256_loadu_ps(row), sum[r][0]);
      const __m256 hi = _mm256_add_ps(from_zero ? zero : _mm256_loadu_ps(row + 8), sum[r][1]);
      if (finish) {
        const FastGemmArgs& args = *finish->args;
        float* out = reinterpret_cast<float*>(args.c + (uint64_t(finish->m0 + r) * args.ldc + finish->n0) *
                                                           sizeof(float));
        _mm256_storeu_ps(out, finish8(args, finish->n0, lo));
        _mm256_storeu_ps(out + 8, finish8(args, finish->n0 + 8, hi));
      } else {
        _mm256_storeu_ps(row, lo);
        _mm256_storeu_ps(row + 8, hi);
      }
    }
  }
};

// finish8 for 16 lanes, of which `lanes` lie inside C.
__attribute__((target("avx512f"))) inline __m512 finish16(const FastGemmArgs& args, uint32_t n,
                                                          __mmask16 lanes, __m512 value) {
  if (args.flags & spec::flag::kBias)
    value = _mm512_add_ps(value, _mm512_maskz_loadu_ps(lanes, reinterpret_cast<const float*>(args.bias) + n));
  if (args.flags & spec::flag::kRelu) {
    const __mmask16 keep = _mm512_cmp_ps_mask(value, _mm512_setzero_ps(), _CMP_GT_OQ) |
                           _mm512_cmp_ps_mask(value, value, _CMP_UNORD_Q);
    value = _mm512_maskz_mov_ps(keep, value);
  }
  const __m512 canonical_nan = _mm512_castsi512_ps(_mm512_set1_epi32(int(numerics::kF32CanonicalNan)));
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(value, value, _CMP_UNORD_Q), value, canonical_nan);
}

// AVX-512: 8 rows x 32 columns in 16 zmm registers, twice the AVX2
// kernel's work per instruction. Masked stores let it finish blocks that C
// cuts short too. It reads A in place, as bf16 rows in device memory
// (run_in_place); the packed form serves C's transpose, whose left operand
// is B's columns.
struct Avx512Kernel {
  static constexpr uint32_t kMr = 8, kNr = 32;
  static constexpr bool kFinishesPartialBlocks = true;
  static constexpr bool kReadsLeftInPlace = true;

  template <bool kFused>
  __attribute__((target("avx512f,avx512bw"))) static void run(const float* a, const float* w, uint32_t depth,
                                                              float* accumulator, bool from_zero,
                                                              const Finish* finish) {
    __m512 sum[kMr][2];
#pragma GCC unroll 8
    for (uint32_t r = 0; r < kMr; ++r) sum[r][0] = sum[r][1] = _mm512_setzero_ps();
    for (uint32_t k = 0; k < depth; ++k) {
#pragma GCC unroll 8
      for (uint32_t r = 0; r < kMr; ++r) multiply_add<kFused, 2>(_mm512_set1_ps(a[r]), w, sum[r]);
      a += kMr;
      w += kNr;
    }
    store<2>(sum, accumulator, from_zero, finish);
  }

  // `a` is the block's first row at the K tile's first K, rows `lda_bytes`
  // apart, of which `rows` lie inside C (the others read the last of those
  // again; their sums are not stored). kHalves = 1 computes only the
  // block's first 16 columns, for a block C cuts to 16 or fewer (the 10
  // logits): half the FMAs.
  template <bool kFused, uint32_t kHalves>
  __attribute__((target("avx512f,avx512bw"))) static void run_in_place(const uint8_t* a, uint64_t lda_bytes,
                                                                       uint32_t rows, const float* w,
                                                                       uint32_t depth, float* accumulator,
                                                                       bool from_zero, const Finish* finish) {
    const uint8_t* row[kMr];
    for (uint32_t r = 0; r < kMr; ++r) row[r] = a + std::min(r, rows - 1) * lda_bytes;
    __m512 sum[kMr][2];
#pragma GCC unroll 8
    for (uint32_t r = 0; r < kMr; ++r) sum[r][0] = sum[r][1] = _mm512_setzero_ps();
    for (uint32_t k = 0; k < depth; ++k) {
#pragma GCC unroll 8
      for (uint32_t r = 0; r < kMr; ++r) {
        // The 32 bits from the value on, broadcast (a load, no shuffle),
        // then shifted so that the value is each lane's top half: its fp32
        // bits (DAZ reads a subnormal as 0). The next value, in the low
        // half, is shifted out; at A's end those two bytes lie past it
        // (kFastGemmReadSlack).
        uint32_t bits;
        std::memcpy(&bits, row[r] + k * sizeof(bf16_t), sizeof bits);
        const __m512 ar = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_set1_epi32(int(bits)), 16));
        multiply_add<kFused, kHalves>(ar, w, sum[r]);
      }
      w += kNr;
    }
    store<kHalves>(sum, accumulator, from_zero, finish);
  }

 private:
  // sum[h] += ar * w[16h .. 16h + 15] for the first kHalves halves.
  template <bool kFused, uint32_t kHalves>
  __attribute__((target("avx512f"), always_inline)) static inline void multiply_add(__m512 ar, const float* w,
                                                                                    __m512 (&sum)[2]) {
    for (uint32_t h = 0; h < kHalves; ++h) {
      const __m512 wh = _mm512_loadu_ps(w + 16 * h);
      if constexpr (kFused)
        sum[h] = _mm512_fmadd_ps(ar, wh, sum[h]);
      else
        sum[h] = _mm512_add_ps(sum[h], _mm512_mul_ps(ar, wh));
    }
  }

  template <uint32_t kHalves>
  __attribute__((target("avx512f"), always_inline)) static inline void store(__m512 (&sum)[kMr][2],
                                                                             float* accumulator,
                                                                             bool from_zero,
                                                                             const Finish* finish) {
    // Lanes of the two halves inside C (all of them without `finish`).
    const uint32_t cols = finish ? finish->cols : kNr;
    const __mmask16 lo_lanes = cols >= 16 ? 0xFFFF : __mmask16((1u << cols) - 1);
    const __mmask16 hi_lanes = cols >= 32 ? 0xFFFF : cols > 16 ? __mmask16((1u << (cols - 16)) - 1) : 0;
#pragma GCC unroll 8
    for (uint32_t r = 0; r < kMr; ++r) {
      float* row = accumulator + r * kNr;
      const __m512 zero = _mm512_setzero_ps();
      const __m512 lo = _mm512_add_ps(from_zero ? zero : _mm512_loadu_ps(row), sum[r][0]);
      const __m512 hi = _mm512_add_ps(from_zero ? zero : _mm512_loadu_ps(row + 16), sum[r][1]);
      if (finish) {
        if (r >= finish->rows) break;
        const FastGemmArgs& args = *finish->args;
        float* out = reinterpret_cast<float*>(args.c + (uint64_t(finish->m0 + r) * args.ldc + finish->n0) *
                                                           sizeof(float));
        _mm512_mask_storeu_ps(out, lo_lanes, finish16(args, finish->n0, lo_lanes, lo));
        if (kHalves == 2)
          _mm512_mask_storeu_ps(out + 16, hi_lanes, finish16(args, finish->n0 + 16, hi_lanes, hi));
      } else {
        _mm512_storeu_ps(row, lo);
        if (kHalves == 2) _mm512_storeu_ps(row + 16, hi);
      }
    }
  }
};

}  // namespace systole::sw_emu::kernels
#endif
