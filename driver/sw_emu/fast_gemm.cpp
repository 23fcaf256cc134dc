// Fast bit-exact GEMM. Operands are decoded to fp32 into packed panels (MR
// rows of A, NR columns of B, each K tile of `k_tile` rows zero-padded, as
// the array pads). For every MR x NR block of C the micro-kernel computes one
// K tile's column sums in registers, starting from +0 in K order, and adds
// them to an fp32 accumulator block: exactly the order of NUMERICS.md.
//
// Threads run with MXCSR FTZ and DAZ set, which implement the contract's
// flush-to-signed-zero rules in hardware. A panel pair whose exponent ranges
// keep every product in the fp32 normal range uses FMA (same bits, since the
// product is exact); any other pair multiplies, then adds.
#include "fast_gemm.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <memory>
#include <vector>

#include "systole/descriptor.h"
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

// Unbiased exponents of the nonzero finite values of a panel.
struct ExponentRange {
  int min = INT_MAX;
  int max = INT_MIN;
  bool special = false;  // holds an Inf or NaN

  void add(bf16_t bits) {
    const int biased = (bits >> 7) & 0xFF;
    if (biased == 0xFF) {
      special = true;
    } else if (biased != 0) {
      min = std::min(min, biased - 127);
      max = std::max(max, biased - 127);
    }
  }
};

// Every product of a value from `a` and one from `w` lies in the fp32 normal
// range (or is an exact zero), so FMA rounds exactly like mul-then-add.
bool fma_safe(const ExponentRange& a, const ExponentRange& w) {
  if (a.special || w.special) return false;
  if (a.min > a.max || w.min > w.max) return true;  // a panel of zeros
  return a.min + w.min >= -126 && a.max + w.max <= 126;
}

// The accumulator's starting value: C when accumulating, else +0.
float initial_accumulator(const FastGemmArgs& args, uint32_t m, uint32_t n) {
  if (!(args.flags & spec::flag::kAccumulate)) return 0.0f;
  if (args.flags & spec::flag::kOutputBf16)
    return numerics::bf16_to_f32(
        load_bf16(args.c + (uint64_t(m) * args.ldc + n) * sizeof(bf16_t)));
  uint32_t bits;
  std::memcpy(&bits, args.c + (uint64_t(m) * args.ldc + n) * sizeof(float),
              sizeof bits);
  return numerics::f32_from_bits(numerics::f32_canonical_bits(bits));
}

// Bias, ReLU and output conversion of one finished accumulator.
void store_output(const FastGemmArgs& args, uint32_t m, uint32_t n,
                  float accumulator) {
  float value = numerics::f32_canonical(accumulator);
  if (args.flags & spec::flag::kBias) {
    uint32_t bits;
    std::memcpy(&bits, args.bias + uint64_t(n) * sizeof(float), sizeof bits);
    value = numerics::add(value, numerics::f32_from_bits(
                                     numerics::f32_canonical_bits(bits)));
  }
  if (args.flags & spec::flag::kRelu) value = numerics::relu(value);
  if (args.flags & spec::flag::kOutputBf16) {
    const bf16_t out = numerics::f32_to_bf16(value);
    std::memcpy(args.c + (uint64_t(m) * args.ldc + n) * sizeof(bf16_t), &out,
                sizeof out);
  } else {
    std::memcpy(args.c + (uint64_t(m) * args.ldc + n) * sizeof(float), &value,
                sizeof value);
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
          const float product =
              k < args.k
                  ? numerics::mul(
                        load_bf16(args.a + (uint64_t(m) * args.lda + k) * 2),
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

// Sets MXCSR FTZ and DAZ for the lifetime of the guard, on this thread.
class FlushToZeroGuard {
 public:
  FlushToZeroGuard() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | kFtz | kDaz); }
  ~FlushToZeroGuard() { _mm_setcsr(saved_); }
  FlushToZeroGuard(const FlushToZeroGuard&) = delete;
  FlushToZeroGuard& operator=(const FlushToZeroGuard&) = delete;

 private:
  static constexpr unsigned kFtz = 1u << 15;
  static constexpr unsigned kDaz = 1u << 6;
  unsigned saved_;
};

// One K tile for an MR x NR block: column sums from +0 in K order, then
// accumulator += sums. `a` is MR-interleaved, `w` NR-interleaved.
template <bool kFused>
__attribute__((target("avx2,fma"))) void micro_kernel(const float* a,
                                                      const float* w,
                                                      uint32_t depth,
                                                      float* accumulator) {
  __m256 sum[kMr][2];
#pragma GCC unroll 6
  for (uint32_t r = 0; r < kMr; ++r)
    sum[r][0] = sum[r][1] = _mm256_setzero_ps();
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
    _mm256_storeu_ps(row, _mm256_add_ps(_mm256_loadu_ps(row), sum[r][0]));
    _mm256_storeu_ps(row + 8, _mm256_add_ps(_mm256_loadu_ps(row + 8), sum[r][1]));
  }
}

struct AlignedFree {
  void operator()(float* p) const { std::free(p); }
};
using FloatArray = std::unique_ptr<float[], AlignedFree>;

FloatArray allocate_floats(std::size_t count) {
  const std::size_t bytes = (count * sizeof(float) + 63) / 64 * 64;
  return FloatArray(static_cast<float*>(std::aligned_alloc(64, bytes ? bytes : 64)));
}

void avx2_gemm(const FastGemmArgs& args, uint32_t threads) {
  const uint32_t tile = args.k_tile;
  const uint32_t k_tiles = (args.k + tile - 1) / tile;
  const uint32_t k_padded = k_tiles * tile;
  const uint32_t row_blocks = (args.m + kMr - 1) / kMr;
  const uint32_t col_blocks = (args.n + kNr - 1) / kNr;
  const uint32_t col_blocks_per_nc = kNc / kNr;

  // A is packed once: [row block][k][MR]. B is packed kNc columns at a time:
  // [column block within kNc][k][NR].
  FloatArray a_packed = allocate_floats(std::size_t(row_blocks) * k_padded * kMr);
  FloatArray b_packed = allocate_floats(std::size_t(col_blocks_per_nc) * k_padded * kNr);
  std::vector<ExponentRange> a_ranges(std::size_t(row_blocks) * k_tiles);
  std::vector<ExponentRange> b_ranges(std::size_t(col_blocks_per_nc) * k_tiles);

#pragma omp parallel num_threads(threads)
  {
    FlushToZeroGuard flush_to_zero;

#pragma omp for schedule(static)
    for (uint32_t block = 0; block < row_blocks; ++block) {
      float* out = a_packed.get() + std::size_t(block) * k_padded * kMr;
      for (uint32_t t = 0; t < k_tiles; ++t) {
        ExponentRange& range = a_ranges[std::size_t(block) * k_tiles + t];
        for (uint32_t kk = 0; kk < tile; ++kk) {
          const uint32_t k = t * tile + kk;
          for (uint32_t r = 0; r < kMr; ++r) {
            const uint32_t m = block * kMr + r;
            bf16_t bits = 0;
            if (m < args.m && k < args.k)
              bits = load_bf16(args.a + (uint64_t(m) * args.lda + k) * 2);
            range.add(bits);
            *out++ = numerics::bf16_to_f32(bits);
          }
        }
      }
    }

    for (uint32_t nc0 = 0; nc0 < col_blocks; nc0 += col_blocks_per_nc) {
      const uint32_t nc_blocks = std::min(col_blocks_per_nc, col_blocks - nc0);
#pragma omp for schedule(static)
      for (uint32_t local = 0; local < nc_blocks; ++local) {
        float* out = b_packed.get() + std::size_t(local) * k_padded * kNr;
        for (uint32_t t = 0; t < k_tiles; ++t) {
          ExponentRange& range = b_ranges[std::size_t(local) * k_tiles + t];
          range = ExponentRange();
          for (uint32_t kk = 0; kk < tile; ++kk) {
            const uint32_t k = t * tile + kk;
            for (uint32_t c = 0; c < kNr; ++c) {
              const uint32_t n = (nc0 + local) * kNr + c;
              bf16_t bits = 0;
              if (n < args.n && k < args.k)
                bits = load_bf16(args.b + (uint64_t(k) * args.ldb + n) * 2);
              range.add(bits);
              *out++ = numerics::bf16_to_f32(bits);
            }
          }
        }
      }  // implicit barrier: B block packed before anyone computes with it

#pragma omp for schedule(static)
      for (uint32_t block = 0; block < row_blocks; ++block) {
        const float* a_panel = a_packed.get() + std::size_t(block) * k_padded * kMr;
        for (uint32_t local = 0; local < nc_blocks; ++local) {
          const float* b_panel = b_packed.get() + std::size_t(local) * k_padded * kNr;
          alignas(32) float accumulator[kMr * kNr];
          for (uint32_t r = 0; r < kMr; ++r)
            for (uint32_t c = 0; c < kNr; ++c) {
              const uint32_t m = block * kMr + r;
              const uint32_t n = (nc0 + local) * kNr + c;
              accumulator[r * kNr + c] =
                  m < args.m && n < args.n ? initial_accumulator(args, m, n) : 0.0f;
            }
          for (uint32_t t = 0; t < k_tiles; ++t) {
            const float* a_tile = a_panel + std::size_t(t) * tile * kMr;
            const float* b_tile = b_panel + std::size_t(t) * tile * kNr;
            if (fma_safe(a_ranges[std::size_t(block) * k_tiles + t],
                         b_ranges[std::size_t(local) * k_tiles + t]))
              micro_kernel<true>(a_tile, b_tile, tile, accumulator);
            else
              micro_kernel<false>(a_tile, b_tile, tile, accumulator);
          }
          for (uint32_t r = 0; r < kMr; ++r)
            for (uint32_t c = 0; c < kNr; ++c) {
              const uint32_t m = block * kMr + r;
              const uint32_t n = (nc0 + local) * kNr + c;
              if (m < args.m && n < args.n)
                store_output(args, m, n, accumulator[r * kNr + c]);
            }
        }
      }  // implicit barrier: everyone is done with this B block
    }
  }
}

#endif  // SYSTOLE_HAVE_X86

}  // namespace

bool fast_gemm_has_avx2() {
#if SYSTOLE_HAVE_X86
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

void fast_gemm(const FastGemmArgs& args, uint32_t threads, FastGemmIsa isa) {
#if SYSTOLE_HAVE_X86
  if (isa == FastGemmIsa::kAuto && fast_gemm_has_avx2()) {
    avx2_gemm(args, std::max(threads, 1u));
    return;
  }
#endif
  portable_gemm(args);
}

}  // namespace systole::sw_emu
