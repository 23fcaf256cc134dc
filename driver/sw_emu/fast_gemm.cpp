// SPDX-License-Identifier: Apache-2.0
// Fast bit-exact GEMM. Operands are decoded to fp32 into packed panels (MR
// rows of A, NR columns of B, K tiles of `k_tile` rows as the array's; the
// zero rows that pad the array's last tile are left out, as they change no
// sum). For every MR x NR block of C the micro-kernel computes one
// K tile's column sums in registers, starting from +0 in K order, and adds
// them to an fp32 accumulator block: exactly the order of NUMERICS.md. The
// first K tile adds them to +0 in registers, and a block inside an fp32 C
// is finished (bias, ReLU) from registers straight into C at its last K
// tile, so a single-tile product never touches the accumulator block.
//
// Threads run with MXCSR FTZ and DAZ set, which implement the contract's
// flush-to-signed-zero rules in hardware. A panel pair whose exponent ranges
// keep every product in the fp32 normal range uses FMA (same bits, since the
// product is exact); any other pair multiplies, then adds.
#include "fast_gemm.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "systole/descriptor.h"
#include "systole/detail/transpose8.h"
#include "systole/numerics.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define SYSTOLE_HAVE_X86 1
#else
#define SYSTOLE_HAVE_X86 0
#endif

namespace systole::sw_emu {
namespace {

using numerics::bf16_t;

constexpr uint32_t kMr = 6;    // rows of C per micro-kernel
constexpr uint32_t kNr = 16;   // columns of C per micro-kernel (2 x 8 lanes)
constexpr uint32_t kNc = 128;  // columns of B packed at a time (fits L2)

bf16_t load_bf16(const uint8_t* p) {
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
bool fma_safe(const ExponentRange& a, const ExponentRange& w) {
  if (a.max == 255 || w.max == 255) return false;                 // Inf or NaN
  if (a.min_nonzero == 255 || w.min_nonzero == 255) return true;  // all zero
  const int lowest = int(a.min_nonzero) + int(w.min_nonzero) - 254;
  const int highest = int(a.max) + int(w.max) - 254;
  return lowest >= -126 && highest <= 126;
}

// The accumulator's starting value: C when accumulating, else +0.
float initial_accumulator(const FastGemmArgs& args, uint32_t m, uint32_t n) {
  if (!(args.flags & spec::flag::kAccumulate)) return 0.0f;
  if (args.flags & spec::flag::kOutputBf16)
    return numerics::bf16_to_f32(load_bf16(args.c + (uint64_t(m) * args.ldc + n) * sizeof(bf16_t)));
  uint32_t bits;
  std::memcpy(&bits, args.c + (uint64_t(m) * args.ldc + n) * sizeof(float), sizeof bits);
  return numerics::f32_from_bits(numerics::f32_canonical_bits(bits));
}

// Bias, ReLU and output conversion of one finished accumulator.
void store_output(const FastGemmArgs& args, uint32_t m, uint32_t n, float accumulator) {
  float value = numerics::f32_canonical(accumulator);
  if (args.flags & spec::flag::kBias) {
    uint32_t bits;
    std::memcpy(&bits, args.bias + uint64_t(n) * sizeof(float), sizeof bits);
    value = numerics::add(value, numerics::f32_from_bits(numerics::f32_canonical_bits(bits)));
  }
  if (args.flags & spec::flag::kRelu) value = numerics::relu(value);
  if (args.flags & spec::flag::kOutputBf16) {
    const bf16_t out = numerics::f32_to_bf16(value);
    std::memcpy(args.c + (uint64_t(m) * args.ldc + n) * sizeof(bf16_t), &out, sizeof out);
  } else {
    std::memcpy(args.c + (uint64_t(m) * args.ldc + n) * sizeof(float), &value, sizeof value);
  }
}

// The contract written out directly: used on hosts without AVX2 + FMA.
void portable_gemm(const FastGemmArgs& args) {
  const uint32_t tile = args.k_tile;
  const uint32_t k_tiles = (args.k + tile - 1) / tile;
  for (uint32_t m = 0; m < args.m; ++m) {
    for (uint32_t n = 0; n < args.n; ++n) {
      float acc = initial_accumulator(args, m, n);
      for (uint32_t t = 0; t < k_tiles; ++t) {
        float sum = 0.0f;
        for (uint32_t r = 0; r < tile; ++r) {
          const uint32_t k = t * tile + r;
          const float product = k < args.k
                                    ? numerics::mul(load_bf16(args.a + (uint64_t(m) * args.lda + k) * 2),
                                                    load_bf16(args.b + (uint64_t(k) * args.ldb + n) * 2))
                                    : 0.0f;
          sum = numerics::add(sum, product);
        }
        acc = numerics::add(acc, sum);
      }
      store_output(args, m, n, acc);
    }
  }
}

#if SYSTOLE_HAVE_X86

// The K rows of tile t that hold data: the array pads the last tile with
// zero rows, whose products (+0 x +0) leave a column sum as it is (a sum
// from +0 is never -0), so the fast engine stops before them.
uint32_t tile_depth(const FastGemmArgs& args, uint32_t t) {
  return std::min(args.k_tile, args.k - t * args.k_tile);
}

// initial_accumulator for fp32 C's row m, columns n..n+7, of a GEMM that
// accumulates: C with NaN canonical and subnormals as zeros of their sign.
__attribute__((target("avx2"))) void load_accumulators8(const FastGemmArgs& args, uint32_t m, uint32_t n,
                                                        float* accumulators) {
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
__attribute__((target("avx2"))) void store_output8(const FastGemmArgs& args, uint32_t m, uint32_t n,
                                                   const float* accumulators) {
  _mm256_storeu_ps(reinterpret_cast<float*>(args.c + (uint64_t(m) * args.ldc + n) * sizeof(float)),
                   finish8(args, n, _mm256_loadu_ps(accumulators)));
}

// One K tile for an MR x NR block: column sums from +0 in K order, then
// accumulator + sums, with +0 for the accumulator when `from_zero` (the first
// K tile of a product that does not accumulate; the accumulator block is
// then not read). `a` is MR-interleaved, `w` NR-interleaved. With `finish`,
// this is the product's last K tile and the block lies wholly inside an
// fp32 C: the results go through finish8 straight into C's rows m0.., columns
// n0.., instead of into the accumulator block.
template <bool kFused>
__attribute__((target("avx2,fma"))) void micro_kernel(const float* a, const float* w, uint32_t depth,
                                                      float* accumulator, bool from_zero,
                                                      const FastGemmArgs* finish, uint32_t m0, uint32_t n0) {
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
      float* out =
          reinterpret_cast<float*>(finish->c + (uint64_t(m0 + r) * finish->ldc + n0) * sizeof(float));
      _mm256_storeu_ps(out, finish8(*finish, n0, lo));
      _mm256_storeu_ps(out + 8, finish8(*finish, n0 + 8, hi));
    } else {
      _mm256_storeu_ps(row, lo);
      _mm256_storeu_ps(row + 8, hi);
    }
  }
}

// A 64-byte aligned float array that keeps its memory between calls, so that
// repeated GEMMs do not pay page faults for fresh packing buffers.
class Workspace {
 public:
  float* get(std::size_t count) {
    if (count > capacity_) {
      const std::size_t bytes = (count * sizeof(float) + 63) / 64 * 64;
      data_.reset(static_cast<float*>(std::aligned_alloc(64, bytes)));
      capacity_ = count;
    }
    return data_.get();
  }

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float[], Free> data_;
  std::size_t capacity_ = 0;
};

// Decodes 8 bf16 values to fp32 (subnormals as zeros of their sign, which
// DAZ would make of them anyway) and folds their biased exponents into the
// running minimum over nonzero values and the running maximum.
__attribute__((target("avx2"))) inline __m256i decode8(const uint8_t* in, __m256i& min_nonzero,
                                                       __m256i& max) {
  const __m256i raw = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in)));
  const __m256i exponent = _mm256_and_si256(_mm256_srli_epi32(raw, 7), _mm256_set1_epi32(0xFF));
  const __m256i zero = _mm256_cmpeq_epi32(exponent, _mm256_setzero_si256());
  const __m256i bits = _mm256_slli_epi32(raw, 16);
  min_nonzero = _mm256_min_epu32(min_nonzero, _mm256_blendv_epi8(exponent, _mm256_set1_epi32(255), zero));
  max = _mm256_max_epu32(max, exponent);
  return _mm256_blendv_epi8(bits, _mm256_and_si256(bits, _mm256_set1_epi32(int(0x80000000u))), zero);
}

__attribute__((target("avx2"))) uint32_t horizontal(__m256i v, bool take_min) {
  alignas(32) uint32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), v);
  uint32_t result = lanes[0];
  for (uint32_t lane : lanes) result = take_min ? std::min(result, lane) : std::max(result, lane);
  return result;
}

// A panel tile's exponent range from vector lanes, merged with the scalar
// values' range.
__attribute__((target("avx2"))) ExponentRange merged(ExponentRange range, __m256i min_nonzero, __m256i max) {
  range.min_nonzero = std::min(range.min_nonzero, horizontal(min_nonzero, true));
  range.max = std::max(range.max, horizontal(max, false));
  return range;
}

// Packs rows [row0, row0 + kMr) of A, all K tiles, MR-interleaved:
// out[(t * tile + kk) * kMr + r]; rows past M are +0. K past the end is not
// written: the micro-kernel stops at the last real K (tile_depth). Eight K
// at a time, the six rows' values are decoded and transposed in registers
// into 48 consecutive floats.
__attribute__((target("avx2"))) void pack_a(const FastGemmArgs& args, uint32_t row0, uint32_t k_tiles,
                                            float* out, ExponentRange* ranges) {
  const uint32_t tile = args.k_tile;
  const uint32_t rows = row0 < args.m ? std::min(kMr, args.m - row0) : 0;
  const uint8_t* row[kMr];
  for (uint32_t r = 0; r < kMr; ++r)
    row[r] = r < rows ? args.a + uint64_t(row0 + r) * args.lda * sizeof(bf16_t) : nullptr;
  const __m256i first_six = _mm256_setr_epi32(-1, -1, -1, -1, -1, -1, 0, 0);
  for (uint32_t t = 0; t < k_tiles; ++t) {
    const uint32_t end = t * tile + tile_depth(args, t);
    ExponentRange range;
    __m256i min_nonzero = _mm256_set1_epi32(255), max = _mm256_setzero_si256();
    uint32_t k = t * tile;
    for (; k + 8 <= end; k += 8) {
      __m256 v[8];
      for (uint32_t r = 0; r < 8; ++r)
        v[r] = r < rows ? _mm256_castsi256_ps(decode8(row[r] + k * sizeof(bf16_t), min_nonzero, max))
                        : _mm256_setzero_ps();
      detail::transpose8x8(v);  // v[i]: K = k + i of rows 0..7
      // Each store's two spare lanes land where the next store writes; the
      // last store leaves them out.
      float* at = out + uint64_t(k) * kMr;
      for (uint32_t i = 0; i < 7; ++i) _mm256_storeu_ps(at + i * kMr, v[i]);
      _mm256_maskstore_ps(at + 7 * kMr, first_six, v[7]);
    }
    for (; k < end; ++k)
      for (uint32_t r = 0; r < kMr; ++r) {
        const bf16_t bits = r < rows ? load_bf16(row[r] + k * sizeof(bf16_t)) : 0;
        range.add(bits);
        out[uint64_t(k) * kMr + r] = numerics::bf16_to_f32(bits);
      }
    ranges[t] = merged(range, min_nonzero, max);
  }
}

// Packs columns [col0, col0 + kNr) of B, all K tiles, NR-interleaved:
// out[(t * tile + kk) * kNr + c]; columns past N are +0, K past the end is
// not written (as in pack_a).
__attribute__((target("avx2"))) void pack_b(const FastGemmArgs& args, uint32_t col0, uint32_t k_tiles,
                                            float* out, ExponentRange* ranges) {
  const uint32_t tile = args.k_tile;
  const uint32_t cols = col0 < args.n ? std::min(kNr, args.n - col0) : 0;
  alignas(32) bf16_t padded[kNr] = {};  // a short row, then +0s
  for (uint32_t t = 0; t < k_tiles; ++t) {
    __m256i min_nonzero = _mm256_set1_epi32(255), max = _mm256_setzero_si256();
    for (uint32_t k = t * tile; k < t * tile + tile_depth(args, t); ++k) {
      const uint8_t* row = args.b + (uint64_t(k) * args.ldb + col0) * sizeof(bf16_t);
      if (cols < kNr) {
        std::memcpy(padded, row, cols * sizeof(bf16_t));
        row = reinterpret_cast<const uint8_t*>(padded);
      }
      float* packed = out + uint64_t(k) * kNr;
      for (uint32_t half = 0; half < 2; ++half)
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(packed + half * 8),
                            decode8(row + half * 8 * sizeof(bf16_t), min_nonzero, max));
    }
    ranges[t] = merged(ExponentRange(), min_nonzero, max);
  }
}

// Loop nest: for each kNc-column block of B (packed by all threads), each
// thread takes blocks of up to kMc rows of C (smaller blocks when C has few
// rows, so that every thread gets about as many: the MLP's 64 rows made one
// block of 48 and one of 16); for each K tile, each NR-column micro
// panel of that tile (8 KiB at k_tile 128, kept in L1) meets every MR-row
// micro panel of A in the block. The block's fp32 accumulators stay in L2
// across K tiles and are finished (bias, ReLU, conversion) at the end.
void avx2_gemm(const FastGemmArgs& args, uint32_t threads) {
  constexpr uint32_t kMc = 8 * kMr;  // rows of C per thread work item
  const uint32_t tile = args.k_tile;
  const uint32_t k_tiles = (args.k + tile - 1) / tile;
  const uint64_t k_padded = uint64_t(k_tiles) * tile;
  const uint32_t row_panels = (args.m + kMr - 1) / kMr;
  const uint32_t col_panels = (args.n + kNr - 1) / kNr;
  const uint32_t panels_per_nc = kNc / kNr;
  // With several threads, at least four work items each where the rows
  // allow.
  const uint32_t panels_per_mc =
      threads > 1 ? std::clamp((row_panels + 4 * threads - 1) / (4 * threads), 1u, kMc / kMr) : kMc / kMr;
  const uint32_t row_blocks = (row_panels + panels_per_mc - 1) / panels_per_mc;

  thread_local Workspace a_workspace, b_workspace;
  float* const a_packed = a_workspace.get(row_panels * k_padded * kMr);
  float* const b_packed = b_workspace.get(panels_per_nc * k_padded * kNr);
  std::vector<ExponentRange> a_ranges(std::size_t(row_panels) * k_tiles);
  std::vector<ExponentRange> b_ranges(std::size_t(panels_per_nc) * k_tiles);

  // Each thread's share; the worksharing loops inside bind to the parallel
  // region when there is one. One thread calls it directly: an OpenMP
  // region costs a few microseconds even for a team of one.
  auto work = [&] {
    const numerics::FlushToZero flush_to_zero;
    thread_local Workspace accumulator_workspace;
    float* const accumulators = accumulator_workspace.get(std::size_t(kMc) * kNc);

#pragma omp for schedule(static)
    for (uint32_t panel = 0; panel < row_panels; ++panel)
      pack_a(args, panel * kMr, k_tiles, a_packed + panel * k_padded * kMr,
             &a_ranges[std::size_t(panel) * k_tiles]);

    for (uint32_t nc_panel0 = 0; nc_panel0 < col_panels; nc_panel0 += panels_per_nc) {
      const uint32_t nc_panels = std::min(panels_per_nc, col_panels - nc_panel0);
#pragma omp for schedule(static)
      for (uint32_t local = 0; local < nc_panels; ++local)
        pack_b(args, (nc_panel0 + local) * kNr, k_tiles, b_packed + local * k_padded * kNr,
               &b_ranges[std::size_t(local) * k_tiles]);
        // (implicit barrier: the B block is packed before anyone uses it)

#pragma omp for schedule(dynamic, 1)
      for (uint32_t block = 0; block < row_blocks; ++block) {
        const uint32_t panel0 = block * panels_per_mc;
        const uint32_t mc_panels = std::min(panels_per_mc, row_panels - panel0);
        auto accumulator = [&](uint32_t i, uint32_t j) {
          return accumulators + (std::size_t(i) * panels_per_nc + j) * kMr * kNr;
        };
        // Calls whole8(accumulators, m, n) for each 8 accumulators of a
        // panel row that lie inside C (row m, columns n..n+7) and one(element,
        // m, n) for each of the rest inside C, in the panel pairs (i, j) that
        // `chosen` picks.
        auto for_each_output = [&](auto whole8, auto one, auto chosen) {
          for (uint32_t i = 0; i < mc_panels; ++i)
            for (uint32_t j = 0; j < nc_panels; ++j) {
              if (!chosen(i, j)) continue;
              for (uint32_t r = 0; r < kMr; ++r) {
                const uint32_t m = (panel0 + i) * kMr + r, n0 = (nc_panel0 + j) * kNr;
                if (m >= args.m) break;
                float* row = accumulator(i, j) + r * kNr;
                for (uint32_t c = 0; c < kNr; c += 8) {
                  if (n0 + c + 8 <= args.n) {
                    whole8(row + c, m, n0 + c);
                    continue;
                  }
                  for (uint32_t n = n0 + c; n < std::min(args.n, n0 + c + 8); ++n) one(row[n - n0], m, n);
                }
              }
            }
        };
        const bool bf16_output = args.flags & spec::flag::kOutputBf16;
        auto load_one = [&](float& acc, uint32_t m, uint32_t n) { acc = initial_accumulator(args, m, n); };
        auto store_one = [&](float& acc, uint32_t m, uint32_t n) { store_output(args, m, n, acc); };
        auto load8 = [&](float* acc, uint32_t m, uint32_t n) { load_accumulators8(args, m, n, acc); };
        auto store8 = [&](float* acc, uint32_t m, uint32_t n) { store_output8(args, m, n, acc); };
        // bf16 C has no 8-wide form: its 8 go one at a time.
        auto by_one = [](auto one) {
          return [one](float* acc, uint32_t m, uint32_t n) {
            for (uint32_t c = 0; c < 8; ++c) one(acc[c], m, n + c);
          };
        };
        // A panel pair wholly inside an fp32 C is finished by the
        // micro-kernel of its last K tile; the others in for_each_output.
        // Rows and columns past C accumulate values that are never stored.
        auto direct = [&](uint32_t i, uint32_t j) {
          return !bf16_output && (panel0 + i + 1) * kMr <= args.m && (nc_panel0 + j + 1) * kNr <= args.n;
        };
        const bool accumulate = args.flags & spec::flag::kAccumulate;
        if (accumulate) {
          auto every = [](uint32_t, uint32_t) { return true; };
          if (bf16_output)
            for_each_output(by_one(load_one), load_one, every);
          else
            for_each_output(load8, load_one, every);
        }
        for (uint32_t t = 0; t < k_tiles; ++t) {
          const uint32_t depth = tile_depth(args, t);
          const bool from_zero = t == 0 && !accumulate, last = t + 1 == k_tiles;
          for (uint32_t j = 0; j < nc_panels; ++j) {
            const float* b_tile = b_packed + (j * k_padded + uint64_t(t) * tile) * kNr;
            const ExponentRange& b_range = b_ranges[std::size_t(j) * k_tiles + t];
            for (uint32_t i = 0; i < mc_panels; ++i) {
              const uint32_t panel = panel0 + i;
              const float* a_tile = a_packed + (panel * k_padded + uint64_t(t) * tile) * kMr;
              const FastGemmArgs* finish = last && direct(i, j) ? &args : nullptr;
              const uint32_t m0 = panel * kMr, n0 = (nc_panel0 + j) * kNr;
              if (fma_safe(a_ranges[std::size_t(panel) * k_tiles + t], b_range))
                micro_kernel<true>(a_tile, b_tile, depth, accumulator(i, j), from_zero, finish, m0, n0);
              else
                micro_kernel<false>(a_tile, b_tile, depth, accumulator(i, j), from_zero, finish, m0, n0);
            }
          }
        }
        auto rest = [&](uint32_t i, uint32_t j) { return !direct(i, j); };
        if (bf16_output)
          for_each_output(by_one(store_one), store_one, rest);
        else
          for_each_output(store8, store_one, rest);
      }
      // (implicit barrier: everyone is done with this B block)
    }
  };
  if (threads > 1) {
#pragma omp parallel num_threads(threads)
    work();
  } else {
    work();
  }
}

#endif  // SYSTOLE_HAVE_X86

// True when the CPU has the AVX2 + FMA the fast kernels need.
bool has_avx2_fma() {
#if SYSTOLE_HAVE_X86
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

}  // namespace

FastGemmArgs fast_gemm_args(const spec::GemmDescriptor& d, const uint8_t* a_port, const uint8_t* b_port,
                            uint8_t* c_port, uint32_t k_tile) {
  FastGemmArgs args;
  args.a = a_port + d.a_addr;
  args.b = b_port + d.b_addr;
  args.c = c_port + d.c_addr;
  args.bias = (d.flags & spec::flag::kBias) ? c_port + d.bias_addr : nullptr;
  args.m = d.m;
  args.n = d.n;
  args.k = d.k;
  args.lda = d.lda;
  args.ldb = d.ldb;
  args.ldc = d.ldc;
  args.flags = d.flags;
  args.k_tile = k_tile;
  return args;
}

void fast_gemm(const FastGemmArgs& args, uint32_t threads, FastGemmIsa isa) {
#if SYSTOLE_HAVE_X86
  if (isa == FastGemmIsa::kAuto && has_avx2_fma()) {
    // Below about 2 M multiply-adds (20 us on one core) waking another
    // thread costs more than it saves; the bits do not depend on it.
    constexpr uint64_t kMacsPerExtraThread = 1 << 21;
    const uint64_t macs = uint64_t(args.m) * args.n * args.k;
    avx2_gemm(args, uint32_t(std::clamp<uint64_t>(macs / kMacsPerExtraThread, 1, std::max(threads, 1u))));
    return;
  }
#endif
  portable_gemm(args);
}

}  // namespace systole::sw_emu
