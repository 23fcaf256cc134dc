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
#include <cstdlib>
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
// Each kernel says what the loop nest may ask of it: kFinishesPartialBlocks
// (finish blocks C cuts short), kReadsLeftInPlace (run_in_place on A's bf16
// rows, which the nest calls where C has at most kInPlaceCols columns),
// kPacksLeft (run on packed left panels, which C's transpose needs),
// kAvx512 (its right panels may be packed with AVX-512).

// AVX2: 6 rows x 16 columns in 12 ymm registers. It reads A in place, as
// bf16 rows in device memory (run_in_place), where C has 64 columns or
// fewer, else packed: on Zen 3 the in-place kernel's shifts take FMA
// slots (10 % slower at 256 columns and more, one thread), while packing
// costs most where each of A's values serves few column panels (10-20 %
// faster in place at the im2col products' 32 and 64 columns and the 10
// logits). It finishes whole blocks only; the others go through the
// accumulator block.
struct Avx2Kernel {
  static constexpr uint32_t kMr = 6, kNr = 16;
  static constexpr bool kFinishesPartialBlocks = false;
  static constexpr bool kReadsLeftInPlace = true;
  static constexpr uint32_t kInPlaceCols = 64;
  static constexpr bool kPacksLeft = true;
  static constexpr bool kAvx512 = false;

  template <bool kFused>
  __attribute__((target("avx2,fma"))) static void run(const float* a, const float* w, uint32_t depth,
                                                      float* accumulator, bool from_zero,
                                                      const Finish* finish) {
    __m256 sum[kMr][2];
#pragma GCC unroll 6
    for (uint32_t r = 0; r < kMr; ++r) sum[r][0] = sum[r][1] = _mm256_setzero_ps();
    for (uint32_t k = 0; k < depth; ++k) {
#pragma GCC unroll 6
      for (uint32_t r = 0; r < kMr; ++r) multiply_add<kFused>(_mm256_broadcast_ss(a + r), w, sum[r]);
      a += kMr;
      w += kNr;
    }
    store(sum, accumulator, from_zero, finish);
  }

  // `a` is the block's first row at the K tile's first K, rows `lda_bytes`
  // apart, of which `rows` lie inside C (the others read the last of those
  // again; their sums are not stored). Each value as the AVX-512 kernel
  // reads it: the 32 bits from it on, broadcast, then shifted into each
  // lane's top half (its fp32 bits; DAZ reads a subnormal as 0). Taking
  // two K from one load (a shift and a mask) measured slower on Zen 3:
  // the mask and the four right-operand vectors left too few registers
  // for the sums.
  template <bool kFused>
  __attribute__((target("avx2,fma"))) static void run_in_place(const uint8_t* a, uint64_t lda_bytes,
                                                               uint32_t rows, uint32_t /*cols*/,
                                                               const float* w, uint32_t depth,
                                                               float* accumulator, bool from_zero,
                                                               const Finish* finish) {
    const uint8_t* row[kMr];
    for (uint32_t r = 0; r < kMr; ++r) row[r] = a + std::min(r, rows - 1) * lda_bytes;
    __m256 sum[kMr][2];
#pragma GCC unroll 6
    for (uint32_t r = 0; r < kMr; ++r) sum[r][0] = sum[r][1] = _mm256_setzero_ps();
    for (uint32_t k = 0; k < depth; ++k) {
#pragma GCC unroll 6
      for (uint32_t r = 0; r < kMr; ++r) {
        uint32_t bits;
        std::memcpy(&bits, row[r] + k * sizeof(bf16_t), sizeof bits);
        multiply_add<kFused>(_mm256_castsi256_ps(_mm256_slli_epi32(_mm256_set1_epi32(int(bits)), 16)), w,
                             sum[r]);
      }
      w += kNr;
    }
    store(sum, accumulator, from_zero, finish);
  }

 private:
  // sum += ar * w[0 .. 15].
  template <bool kFused>
  __attribute__((target("avx2,fma"), always_inline)) static inline void multiply_add(__m256 ar,
                                                                                     const float* w,
                                                                                     __m256 (&sum)[2]) {
    for (uint32_t h = 0; h < 2; ++h) {
      const __m256 wh = _mm256_loadu_ps(w + 8 * h);
      if constexpr (kFused)
        sum[h] = _mm256_fmadd_ps(ar, wh, sum[h]);
      else
        sum[h] = _mm256_add_ps(sum[h], _mm256_mul_ps(ar, wh));
    }
  }

  __attribute__((target("avx2,fma"), always_inline)) static inline void store(__m256 (&sum)[kMr][2],
                                                                              float* accumulator,
                                                                              bool from_zero,
                                                                              const Finish* finish) {
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

// One row of a block's 16 columns from n0 (n0 + 16h in the block's
// columns 16h..): `sums` added to the accumulator row (+0 when
// `from_zero`), then through the output stage into C's row m of the lanes
// inside C (`finish`), or back into the accumulator row.
__attribute__((target("avx512f"), always_inline)) inline void store_row16(__m512 sums, float* accumulator_row,
                                                                          bool from_zero,
                                                                          const Finish* finish, uint32_t m,
                                                                          uint32_t n0, __mmask16 lanes) {
  const __m512 value =
      _mm512_add_ps(from_zero ? _mm512_setzero_ps() : _mm512_loadu_ps(accumulator_row), sums);
  if (!finish) {
    _mm512_storeu_ps(accumulator_row, value);
    return;
  }
  const FastGemmArgs& args = *finish->args;
  float* out = reinterpret_cast<float*>(args.c + (uint64_t(m) * args.ldc + n0) * sizeof(float));
  _mm512_mask_storeu_ps(out, lanes, finish16(args, n0, lanes, value));
}

// The lanes of 16 columns from `first` (of a block's) inside C, `cols` of
// which are.
inline __mmask16 lanes_inside(uint32_t cols, uint32_t first) {
  return cols >= first + 16 ? 0xFFFF : cols > first ? __mmask16((1u << (cols - first)) - 1) : 0;
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
  static constexpr uint32_t kInPlaceCols = UINT32_MAX;
  static constexpr bool kPacksLeft = true;
  static constexpr bool kAvx512 = true;

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
  // again; their sums are not stored), and `cols` of its columns. A block
  // C cuts to 16 columns or fewer has only its first 16 computed: half the
  // FMAs.
  template <bool kFused>
  static void run_in_place(const uint8_t* a, uint64_t lda_bytes, uint32_t rows, uint32_t cols, const float* w,
                           uint32_t depth, float* accumulator, bool from_zero, const Finish* finish) {
    if (cols <= kNr / 2)
      run_halves<kFused, 1>(a, lda_bytes, rows, w, depth, accumulator, from_zero, finish);
    else
      run_halves<kFused, 2>(a, lda_bytes, rows, w, depth, accumulator, from_zero, finish);
  }

 private:
  template <bool kFused, uint32_t kHalves>
  __attribute__((target("avx512f,avx512bw"))) static void run_halves(const uint8_t* a, uint64_t lda_bytes,
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
    const uint32_t rows = finish ? finish->rows : kMr;
    const __mmask16 lo_lanes = lanes_inside(cols, 0), hi_lanes = lanes_inside(cols, 16);
    const uint32_t m0 = finish ? finish->m0 : 0, n0 = finish ? finish->n0 : 0;
#pragma GCC unroll 8
    for (uint32_t r = 0; r < kMr; ++r) {
      if (r >= rows) break;
      float* row = accumulator + r * kNr;
      store_row16(sum[r][0], row, from_zero, finish, m0 + r, n0, lo_lanes);
      if (kHalves == 2) store_row16(sum[r][1], row + 16, from_zero, finish, m0 + r, n0 + 16, hi_lanes);
    }
  }
};

// Byte shuffles that make, from words interleaving rows 2q and 2q + 1 in
// 128-bit lane q (unpack's order: the two rows at K 0, then at K 1, ...),
// the fp32 bits of rows 2q, 2q, 2q + 1, 2q + 1 at K kk: the bf16 value in
// each lane's top half, +0 below (-128 zeroes a byte; DAZ reads a
// subnormal as 0). For Avx512PairKernel.
struct PairPicks {
  alignas(64) int8_t bytes[4][64];
  constexpr PairPicks() : bytes{} {
    for (uint32_t kk = 0; kk < 4; ++kk)
      for (uint32_t lane = 0; lane < 16; ++lane) {
        const int8_t from = int8_t(4 * kk + 2 * ((lane % 4) / 2));
        bytes[kk][4 * lane] = bytes[kk][4 * lane + 1] = -128;
        bytes[kk][4 * lane + 2] = from;
        bytes[kk][4 * lane + 3] = int8_t(from + 1);
      }
  }
};
inline constexpr PairPicks kPairPicks{};

// AVX-512 for C of 12 columns or fewer (the 10 logits): 16 rows x 16
// columns, with a vector's 16 lanes 8 rows x 2 columns (lane L: row L / 2,
// column L % 2 of a pair). Ten columns take 5 such vectors per 8 rows and
// K, where the 8 x 32 kernel's half block takes 8 (one per row, 6 of its
// 16 lanes past C). For each K, the rows' A values are shuffled into
// pairs of lanes and each pair of B values is broadcast; A is read in
// place, as bf16 rows in device memory, B from panels packed 16 wide.
// Only the direct order: the left operand is never packed.
struct Avx512PairKernel {
  static constexpr uint32_t kMr = 16, kNr = 16;
  static constexpr uint32_t kMaxCols = 12;  // 7 or 8 pairs gain nothing on the 8 x 32 kernel's half block
  static constexpr bool kFinishesPartialBlocks = true;
  static constexpr bool kReadsLeftInPlace = true;
  static constexpr uint32_t kInPlaceCols = kMaxCols;
  static constexpr bool kPacksLeft = false;
  static constexpr bool kAvx512 = true;

  // As Avx512Kernel::run_in_place, for `cols` <= kMaxCols.
  template <bool kFused>
  static void run_in_place(const uint8_t* a, uint64_t lda_bytes, uint32_t rows, uint32_t cols, const float* w,
                           uint32_t depth, float* accumulator, bool from_zero, const Finish* finish) {
    switch ((cols + 1) / 2) {
#define SYSTOLE_PAIRS(pairs) \
  case pairs:                \
    return run_pairs<kFused, pairs>(a, lda_bytes, rows, w, depth, accumulator, from_zero, finish);
      SYSTOLE_PAIRS(1)
      SYSTOLE_PAIRS(2)
      SYSTOLE_PAIRS(3)
      SYSTOLE_PAIRS(4)
      SYSTOLE_PAIRS(5)
      SYSTOLE_PAIRS(6)
#undef SYSTOLE_PAIRS
      default:  // the engine picks this kernel only for C of kMaxCols columns or fewer
        std::abort();
    }
  }

 private:
  template <bool kFused, uint32_t kPairs>
  __attribute__((target("avx512f,avx512bw,avx512vl"))) static void run_pairs(
      const uint8_t* a, uint64_t lda_bytes, uint32_t rows, const float* w, uint32_t depth, float* accumulator,
      bool from_zero, const Finish* finish) {
    const uint8_t* row[kMr];  // the last row inside C stands in for those past it
    for (uint32_t r = 0; r < kMr; ++r) row[r] = a + std::min(r, rows - 1) * lda_bytes;
    const __m512i pick[4] = {_mm512_load_si512(kPairPicks.bytes[0]), _mm512_load_si512(kPairPicks.bytes[1]),
                             _mm512_load_si512(kPairPicks.bytes[2]), _mm512_load_si512(kPairPicks.bytes[3])};
    __m512 sum[2][kPairs];
    for (uint32_t h = 0; h < 2; ++h)
      for (uint32_t p = 0; p < kPairs; ++p) sum[h][p] = _mm512_setzero_ps();
    // Eight K at a time, then the tile's last 1..7 (a loop of its own, so
    // that the sums stay in registers through the first).
    __m512i low[2], high[2];
    uint32_t k0 = 0;
    for (; k0 + 8 <= depth; k0 += 8) {
      load_eight(row, k0, 0xFF, low, high);
#pragma GCC unroll 8
      for (uint32_t kk = 0; kk < 8; ++kk)
        multiply_add<kFused>(_mm512_shuffle_epi8(kk < 4 ? low[0] : high[0], pick[kk % 4]),
                             _mm512_shuffle_epi8(kk < 4 ? low[1] : high[1], pick[kk % 4]),
                             w + uint64_t(k0 + kk) * kNr, sum);
    }
    if (k0 < depth) {
      load_eight(row, k0, __mmask8((1u << (depth - k0)) - 1), low, high);
      for (uint32_t kk = 0; k0 + kk < depth; ++kk)
        multiply_add<kFused>(_mm512_shuffle_epi8(kk < 4 ? low[0] : high[0], pick[kk % 4]),
                             _mm512_shuffle_epi8(kk < 4 ? low[1] : high[1], pick[kk % 4]),
                             w + uint64_t(k0 + kk) * kNr, sum);
    }
    // Pairs back into rows: row r's columns 2p, 2p + 1 are 64-bit lane r
    // of pair p's vector, so each half's rows are an 8 x 8 transpose of
    // 64-bit lanes. Then as the 8 x 32 kernel's half block.
    const uint32_t cols = finish ? finish->cols : kNr;
    const uint32_t inside = finish ? finish->rows : kMr;
    const __mmask16 lanes = lanes_inside(cols, 0);
    for (uint32_t h = 0; h < 2; ++h) {
      __m512d v[8];
      for (uint32_t p = 0; p < 8; ++p) v[p] = p < kPairs ? _mm512_castps_pd(sum[h][p]) : _mm512_setzero_pd();
      transpose8x8(v);
      for (uint32_t r = 0; r < 8; ++r) {
        const uint32_t block_row = 8 * h + r;
        if (block_row >= inside) return;
        store_row16(_mm512_castpd_ps(v[r]), accumulator + block_row * kNr, from_zero, finish,
                    finish ? finish->m0 + block_row : 0, finish ? finish->n0 : 0, lanes);
      }
    }
  }

  // K k0.. of the block's rows (the K in `in_tile`; nothing else is read),
  // each half's rows 0, 2, 4, 6 in 128-bit lanes 0..3 of one vector and
  // 1, 3, 5, 7 in the other, interleaved by word: K 0..3 into low[h], 4..7
  // into high[h].
  __attribute__((target("avx512f,avx512bw,avx512vl"), always_inline)) static inline void load_eight(
      const uint8_t* const (&row)[kMr], uint32_t k0, __mmask8 in_tile, __m512i (&low)[2],
      __m512i (&high)[2]) {
    for (uint32_t h = 0; h < 2; ++h) {
      auto load = [&](uint32_t r) __attribute__((target("avx512f,avx512bw,avx512vl"))) {
        return _mm_maskz_loadu_epi16(in_tile, row[8 * h + r] + k0 * sizeof(bf16_t));
      };
      __m512i even = _mm512_castsi128_si512(load(0)), odd = _mm512_castsi128_si512(load(1));
      even = _mm512_inserti32x4(even, load(2), 1);
      odd = _mm512_inserti32x4(odd, load(3), 1);
      even = _mm512_inserti32x4(even, load(4), 2);
      odd = _mm512_inserti32x4(odd, load(5), 2);
      even = _mm512_inserti32x4(even, load(6), 3);
      odd = _mm512_inserti32x4(odd, load(7), 3);
      low[h] = _mm512_unpacklo_epi16(even, odd);
      high[h] = _mm512_unpackhi_epi16(even, odd);
    }
  }

  // One K: sum[h][p] += a_h * (B's columns 2p, 2p + 1 at this K, as one
  // 64-bit lane broadcast), a_h the fp32 bits of half h's rows in pairs
  // of lanes.
  template <bool kFused, uint32_t kPairs>
  __attribute__((target("avx512f"), always_inline)) static inline void multiply_add(
      __m512i a0_bits, __m512i a1_bits, const float* wk, __m512 (&sum)[2][kPairs]) {
    const __m512 a0 = _mm512_castsi512_ps(a0_bits), a1 = _mm512_castsi512_ps(a1_bits);
#pragma GCC unroll 6
    for (uint32_t p = 0; p < kPairs; ++p) {
      double pair;
      std::memcpy(&pair, wk + 2 * p, sizeof pair);
      const __m512 wp = _mm512_castpd_ps(_mm512_set1_pd(pair));
      if constexpr (kFused) {
        sum[0][p] = _mm512_fmadd_ps(a0, wp, sum[0][p]);
        sum[1][p] = _mm512_fmadd_ps(a1, wp, sum[1][p]);
      } else {
        sum[0][p] = _mm512_add_ps(sum[0][p], _mm512_mul_ps(a0, wp));
        sum[1][p] = _mm512_add_ps(sum[1][p], _mm512_mul_ps(a1, wp));
      }
    }
  }

  // v[i] lane j <-> v[j] lane i, for 64-bit lanes.
  __attribute__((target("avx512f"), always_inline)) static inline void transpose8x8(__m512d (&v)[8]) {
    __m512d t[8];
    for (uint32_t i = 0; i < 8; i += 2) {  // 2 x 2 blocks
      t[i] = _mm512_unpacklo_pd(v[i], v[i + 1]);
      t[i + 1] = _mm512_unpackhi_pd(v[i], v[i + 1]);
    }
    // 4 x 4 blocks: 128-bit lanes 0, 2 of one with 0, 2 of the other, and 1, 3.
    __m512d u[8];
    for (uint32_t i = 0; i < 8; i += 4)
      for (uint32_t j = 0; j < 2; ++j) {
        u[i + j] = _mm512_shuffle_f64x2(t[i + j], t[i + j + 2], 0x88);
        u[i + j + 2] = _mm512_shuffle_f64x2(t[i + j], t[i + j + 2], 0xDD);
      }
    for (uint32_t j = 0; j < 4; ++j) {
      v[j] = _mm512_shuffle_f64x2(u[j], u[j + 4], 0x88);
      v[j + 4] = _mm512_shuffle_f64x2(u[j], u[j + 4], 0xDD);
    }
  }
};

}  // namespace systole::sw_emu::kernels
#endif
