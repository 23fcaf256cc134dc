// SPDX-License-Identifier: Apache-2.0
// Host operands rounded to bf16 (f32_to_bf16, bit for bit): with
// AVX512-BF16's conversion instruction where the CPU has it, else the
// contract's code vectorised for the CPU; stored transposed operands go
// through 8 x 8 register transposes first; large ones are rounded in bands
// of rows on several threads.
#include "bf16_rounding.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>

#include "systole/detail/transpose8.h"
#include "systole/matmul.h"
#include "systole/numerics.h"
#include "systole/thread_team.h"

namespace systole {
namespace {

// f32_to_bf16 of `rows` rows of `cols` values, `stride` apart, into
// `out` packed, with `convert` (f32_to_bf16 of an array).
template <class Convert>
inline void convert_each_row(const float* x, uint32_t rows, uint32_t cols, uint32_t stride, uint16_t* out,
                             Convert convert) {
  if (stride == cols) {
    convert(x, std::size_t(rows) * cols, out);
    return;
  }
  for (uint32_t r = 0; r < rows; ++r) convert(x + std::size_t(r) * stride, cols, out + std::size_t(r) * cols);
}

// Compiled three times, and picked by the CPU at load time: the contract's
// conversion vectorises 16 values wide with AVX-512 (x86-64-v4), 8 with
// AVX2 (the baseline's 4).
__attribute__((target_clones("arch=x86-64-v4", "avx2", "default"))) void convert_rows_vectorised(
    const float* x, uint32_t rows, uint32_t cols, uint32_t stride, uint16_t* out) {
  convert_each_row(x, rows, cols, stride, out, [](const float* in, std::size_t count, uint16_t* to) {
    numerics::f32_to_bf16_array(in, to, count);
  });
}

#if defined(__x86_64__)
// f32_to_bf16 with AVX512-BF16's conversion instruction, 32 values at a
// time. It rounds as the contract does (to nearest even, carrying into
// the exponent up to Inf; fp32 subnormals to the zero of their sign) but
// keeps a NaN's payload, so NaNs are replaced by the canonical NaN after.
// Tested against f32_to_bf16 over all 2^32 inputs.
__attribute__((target("avx512f,avx512bw,avx512bf16"), always_inline)) inline __m512i convert32(__m512 lo,
                                                                                               __m512 hi) {
  const __m512i bf16 = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo));  // lo's 16 first
  const __mmask32 nan =
      _mm512_kunpackw(_mm512_cmp_ps_mask(hi, hi, _CMP_UNORD_Q), _mm512_cmp_ps_mask(lo, lo, _CMP_UNORD_Q));
  return _mm512_mask_mov_epi16(bf16, nan, _mm512_set1_epi16(short(numerics::kBf16CanonicalNan)));
}

__attribute__((target("avx512f,avx512bw,avx512bf16"))) void f32_to_bf16_instruction(const float* in,
                                                                                    std::size_t count,
                                                                                    uint16_t* out) {
  std::size_t i = 0;
  for (; i + 32 <= count; i += 32)
    _mm512_storeu_si512(out + i, convert32(_mm512_loadu_ps(in + i), _mm512_loadu_ps(in + i + 16)));
  if (i == count) return;
  // The last 1..31 values, through masks: nothing past the arrays is read
  // or written.
  const uint32_t left = uint32_t(count - i);
  const __mmask16 lo_lanes = left >= 16 ? 0xFFFF : __mmask16((1u << left) - 1);
  const __mmask16 hi_lanes = left > 16 ? __mmask16((1u << (left - 16)) - 1) : 0;
  const __m512i last =
      convert32(_mm512_maskz_loadu_ps(lo_lanes, in + i), _mm512_maskz_loadu_ps(hi_lanes, in + i + 16));
  _mm512_mask_storeu_epi16(out + i, __mmask32((uint64_t(1) << left) - 1), last);
}

__attribute__((target("avx512f,avx512bw,avx512bf16"))) void convert_rows_instruction(
    const float* x, uint32_t rows, uint32_t cols, uint32_t stride, uint16_t* out) {
  convert_each_row(x, rows, cols, stride, out, f32_to_bf16_instruction);
}
#endif

// f32_to_bf16 of `rows` rows of `cols` values, `stride` apart, into
// `out` packed: with the conversion instruction where the CPU has it.
void convert_rows(const float* x, uint32_t rows, uint32_t cols, uint32_t stride, uint16_t* out) {
#if defined(__x86_64__)
  static const bool instruction = __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512bw");
  if (instruction) return convert_rows_instruction(x, rows, cols, stride, out);
#endif
  convert_rows_vectorised(x, rows, cols, stride, out);
}

// out[r][c] = x[c * stride + r] for r in [r0, r1), c in [c0, c1), one
// value at a time; out has `cols` columns.
void transpose_rect(const float* x, uint32_t stride, uint32_t cols, uint32_t r0, uint32_t r1, uint32_t c0,
                    uint32_t c1, float* out) {
  for (uint32_t r = r0; r < r1; ++r)
    for (uint32_t c = c0; c < c1; ++c) out[std::size_t(r) * cols + c] = x[std::size_t(c) * stride + r];
}

// out[r][c] = x[c * stride + r] for r < rows, c < cols: column blocks of
// 64, so that the block's strided reads stay in L1 and the writes run along
// rows. The portable form.
constexpr uint32_t kTransposeBlock = 64;
void transpose_portable(const float* x, uint32_t rows, uint32_t cols, uint32_t stride, float* out) {
  for (uint32_t c0 = 0; c0 < cols; c0 += kTransposeBlock)
    transpose_rect(x, stride, cols, 0, rows, c0, std::min(cols, c0 + kTransposeBlock), out);
}

#if defined(__x86_64__)
// The same, 8 x 8 blocks transposed in AVX2 registers (the blocks' order
// as above; the edges one value at a time). A copy, so the bits are x's.
__attribute__((target("avx2"))) void transpose_avx2(const float* x, uint32_t rows, uint32_t cols,
                                                    uint32_t stride, float* out) {
  const uint32_t whole_rows = rows / 8 * 8;
  for (uint32_t c0 = 0; c0 < cols; c0 += kTransposeBlock) {
    const uint32_t c1 = std::min(cols, c0 + kTransposeBlock), whole_c1 = c0 + (c1 - c0) / 8 * 8;
    for (uint32_t r = 0; r < whole_rows; r += 8) {
      for (uint32_t c = c0; c < whole_c1; c += 8) {
        __m256 v[8];
        for (uint32_t i = 0; i < 8; ++i) v[i] = _mm256_loadu_ps(x + std::size_t(c + i) * stride + r);
        detail::transpose8x8(v);
        for (uint32_t j = 0; j < 8; ++j) _mm256_storeu_ps(out + std::size_t(r + j) * cols + c, v[j]);
      }
      transpose_rect(x, stride, cols, r, r + 8, whole_c1, c1, out);
    }
    transpose_rect(x, stride, cols, whole_rows, rows, c0, c1, out);
  }
}
#endif

// convert_rows on up to `threads` threads, each a band of rows. Below
// about 1 M values (some 100 us on one core) another thread costs more
// than it saves: besides waking it, the bands it writes sit in its core's
// cache, from which the engine's threads must fetch them (on a 2-core VM,
// 128 x 1600 values rounded on two threads made a one-thread product's
// staging 22 -> 65 us).
void convert_rows_parallel(const float* x, uint32_t rows, uint32_t cols, uint32_t stride, uint16_t* out,
                           uint32_t threads) {
  constexpr uint64_t kValuesPerExtraThread = uint64_t(1) << 20;
  const uint32_t team = uint32_t(std::clamp<uint64_t>(uint64_t(rows) * cols / kValuesPerExtraThread, 1,
                                                      std::max(1u, std::min(threads, rows))));
  if (team <= 1) {
    convert_rows(x, rows, cols, stride, out);
    return;
  }
  ThreadTeam::of_this_thread().run(team, [&](const Crew& crew) {
    const uint64_t part = crew.member(), parts = crew.members();
    const uint32_t first = uint32_t(rows * part / parts), end = uint32_t(rows * (part + 1) / parts);
    convert_rows(x + std::size_t(first) * stride, end - first, cols, stride, out + std::size_t(first) * cols);
  });
}

}  // namespace

void to_bf16(const float* x, uint32_t rows, uint32_t cols, bool transposed, uint32_t stride,
             std::vector<float>& scratch, uint16_t* out, uint32_t threads) {
  if (transposed) {
    scratch.resize(std::size_t(rows) * cols);
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx2"))
      transpose_avx2(x, rows, cols, stride, scratch.data());
    else
#endif
      transpose_portable(x, rows, cols, stride, scratch.data());
    x = scratch.data();
    stride = cols;
  }
  convert_rows_parallel(x, rows, cols, stride, out, threads);
}

void round_to_bf16(const float* in, std::size_t count, uint16_t* out) {
  // One row: convert_rows takes 32-bit sizes.
  constexpr std::size_t kPiece = std::size_t(1) << 30;
  for (std::size_t done = 0; done < count; done += kPiece) {
    const uint32_t piece = uint32_t(std::min(kPiece, count - done));
    convert_rows(in + done, 1, piece, piece, out + done);
  }
}

}  // namespace systole
