// SPDX-License-Identifier: Apache-2.0
// Fast bit-exact GEMM. Operands are decoded to fp32 into packed panels
// (fast_gemm_packing.h: NR columns of B, and MR rows of A where the kernel
// does not read A in place; K tiles of `k_tile` rows as the array's; the
// zero rows that pad the array's last tile are left out, as they change no
// sum). For every MR x NR
// block of C the micro-kernel computes one K tile's column sums in
// registers, starting from +0 in K order, and adds them to an fp32
// accumulator block: exactly the order of NUMERICS.md. The first K tile adds
// them to +0 in registers, and a block inside an fp32 C is finished (bias,
// ReLU) from registers straight into C at its last K tile, so a single-tile
// product never touches the accumulator block.
//
// Micro-kernels (fast_gemm_kernels.h), picked by the CPU: AVX-512 (8 x 32
// blocks; masked stores for the blocks C cuts short; A read in place as
// bf16 rows; for C of 12 columns or fewer, 16 x 16 blocks whose vectors
// hold 8 rows x 2 columns) and AVX2 + FMA (6 x 16). C with few columns may
// be computed as its transpose, C^T = B^T A^T: the same sums in the same
// order, so the same bits.
//
// Threads run with MXCSR FTZ and DAZ set, which implement the contract's
// flush-to-signed-zero rules in hardware. A panel pair whose exponent ranges
// keep every product in the fp32 normal range uses FMA (same bits, since the
// product is exact); any other pair multiplies, then adds.
#include "fast_gemm.h"
#include "fast_gemm_kernels.h"
#include "fast_gemm_packing.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <type_traits>

#include "systole/descriptor.h"
#include "systole/detail/transpose8.h"
#include "systole/numerics.h"
#include "systole/thread_team.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define SYSTOLE_HAVE_X86 1
#else
#define SYSTOLE_HAVE_X86 0
#endif

namespace systole::sw_emu {
namespace {

using numerics::bf16_t;

using packing::ExponentRange;
using packing::fma_safe;
using packing::load_bf16;

constexpr uint32_t kNc = 128;  // columns of the right operand packed at a time (fits L2)

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

// x[i] += +0 for `count` values: -0 becomes +0, nothing else changes.
void add_zero(float* x, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) x[i] += 0.0f;
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

using kernels::Avx2Kernel;
using kernels::Avx512Kernel;
using kernels::Avx512PairKernel;
using kernels::Finish;
using kernels::load_accumulators8;
using kernels::store_output8;
using packing::pack;
using packing::range_in_place;
using packing::Source;
using packing::tile_depth;

// A 64-byte aligned array that keeps its memory between calls, so that
// repeated GEMMs do not pay page faults or allocations for fresh buffers.
template <class T>
class Workspace {
 public:
  T* get(std::size_t count) {
    if (count > capacity_) {
      const std::size_t bytes = (count * sizeof(T) + 63) / 64 * 64;
      data_.reset(static_cast<T*>(std::aligned_alloc(64, bytes)));
      capacity_ = count;
    }
    return data_.get();
  }

 private:
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T[], Free> data_;
  std::size_t capacity_ = 0;
};

// The output stage for a block of C's transpose: `block` holds rows n0..
// (of C^T, so C's columns) and kNr columns m0.. (C's rows), `rows` of them
// inside C^T. Eight by eight, transposed in registers into C's rows.
template <uint32_t kMr, uint32_t kNr>
__attribute__((target("avx2"))) void store_transposed(const FastGemmArgs& args, const float* block,
                                                      uint32_t n0, uint32_t m0) {
  const bool whole8 = !(args.flags & spec::flag::kOutputBf16);
  for (uint32_t r0 = 0; r0 < kMr; r0 += 8)
    for (uint32_t c0 = 0; c0 < kNr; c0 += 8) {
      const uint32_t n = n0 + r0;
      if (n >= args.n || m0 + c0 >= args.m) continue;
      __m256 v[8];
      for (uint32_t r = 0; r < 8; ++r)
        v[r] = r0 + r < kMr ? _mm256_loadu_ps(block + (r0 + r) * kNr + c0) : _mm256_setzero_ps();
      detail::transpose8x8(v);  // v[c]: C's row m0 + c0 + c, columns n..n+7
      for (uint32_t c = 0; c < 8 && m0 + c0 + c < args.m; ++c) {
        const uint32_t m = m0 + c0 + c;
        alignas(32) float lanes[8];
        _mm256_store_ps(lanes, v[c]);
        if (whole8 && n + 8 <= args.n && r0 + 8 <= kMr) {
          store_output8(args, m, n, lanes);
          continue;
        }
        for (uint32_t j = 0; j < 8 && r0 + j < kMr && n + j < args.n; ++j)
          store_output(args, m, n + j, lanes[j]);
      }
    }
}

// Loop nest: for each kNc-column block of the right operand (packed by all
// threads), each thread takes blocks of up to kMc rows (smaller blocks when
// there are few rows, so that every thread gets about as many: the MLP's
// 64 rows made one block of 48 and one of 16); for each K tile, each
// kNr-wide micro panel of that tile (8 to 16 KiB at k_tile 128, kept in
// L1) meets every kMr-row micro panel of the left operand in the block
// (packed, or read in place by a kernel that can). The block's fp32
// accumulators stay in L2 across K tiles and are finished
// (bias, ReLU, conversion) at the end, or by the micro-kernel of the last
// K tile where it can write C itself.
//
// `transposed` computes C's transpose, C^T = B^T A^T (B's columns are the
// nest's rows): the same sums in the same K order, so the same bits, in a
// layout that fills the kernel's kNr columns when C has only a few (the
// 10 logits).
template <class Kernel>
void blocked_gemm(const FastGemmArgs& args, uint32_t threads, bool transposed) {
  constexpr uint32_t kMr = Kernel::kMr, kNr = Kernel::kNr;
  constexpr uint32_t kMc = 8 * kMr;  // rows per thread work item
  const Source a{args.a, args.lda, 1, args.m}, b{args.b, 1, args.ldb, args.n};
  const Source& left = transposed ? b : a;
  const Source& right = transposed ? a : b;
  const uint32_t rows = left.extent, cols = right.extent;
  const uint32_t tile = args.k_tile;
  const uint32_t k_tiles = (args.k + tile - 1) / tile;
  const uint64_t k_padded = uint64_t(k_tiles) * tile;
  const uint32_t row_panels = (rows + kMr - 1) / kMr;
  const uint32_t col_panels = (cols + kNr - 1) / kNr;
  const uint32_t panels_per_nc = kNc / kNr;
  // Two ways to share the work. With many rows, the threads pack each
  // column block together and split its rows, at least four row blocks
  // each where the rows allow. With few rows (each thread would get less
  // than two full row blocks), each thread takes whole column groups,
  // packs them itself and runs every row against them: small row blocks
  // would reload a shared column tile from another core's cache for every
  // few rows.
  const bool split_columns = threads > 1 && row_panels <= 2 * threads * (kMc / kMr) && col_panels >= threads;
  const uint32_t panels_per_mc =
      threads > 1 && !split_columns
          ? std::clamp((row_panels + 4 * threads - 1) / (4 * threads), 1u, kMc / kMr)
          : kMc / kMr;
  const uint32_t row_blocks = (row_panels + panels_per_mc - 1) / panels_per_mc;
  const uint32_t group_panels = std::min(panels_per_nc, (col_panels + threads - 1) / threads);
  // A kernel that reads A in place does not pack it where C has at most
  // its kInPlaceCols columns: packing would write A again in fp32 and
  // read it back (85 MB at the TPU CNN's 9216 x 2304 forward), which
  // costs most where each value serves few column panels.
  const bool left_in_place = Kernel::kReadsLeftInPlace && !transposed && cols <= Kernel::kInPlaceCols;
  // Left panels read in place are scanned for their exponent range in
  // groups of some 8 K values, not one by one: each scan ends by folding
  // its lanes into one range, which a panel of K = 9 (72 values) would pay
  // for every 72 values. A group's range bounds each of its panels', so a
  // panel that would pass fma_safe alone may multiply, then add, here:
  // slower, with the same bits.
  constexpr uint64_t kScanValues = 8192;
  const uint32_t scan_panels =
      uint32_t(std::clamp<uint64_t>(kScanValues / (uint64_t(kMr) * args.k), 1, std::max(row_panels, 1u)));
  const uint32_t scan_groups = (row_panels + scan_panels - 1) / scan_panels;

  thread_local Workspace<float> left_workspace;
  thread_local Workspace<ExponentRange> left_range_workspace;
  float* const left_packed = left_in_place ? nullptr : left_workspace.get(row_panels * k_padded * kMr);
  ExponentRange* const left_ranges = left_range_workspace.get(std::size_t(row_panels) * k_tiles);
  // The column block the threads share (split_columns: each thread's own).
  thread_local Workspace<float> shared_right_workspace;
  thread_local Workspace<ExponentRange> shared_right_range_workspace;
  float* const shared_right =
      split_columns ? nullptr : shared_right_workspace.get(panels_per_nc * k_padded * kNr);
  ExponentRange* const shared_right_ranges =
      split_columns ? nullptr : shared_right_range_workspace.get(std::size_t(panels_per_nc) * k_tiles);
  const bool bf16_output = args.flags & spec::flag::kOutputBf16;
  const bool accumulate = args.flags & spec::flag::kAccumulate;

  // The right operand's column block from panel nc_panel0 is packed into
  // `packed` (and its exponent ranges into `ranges`); this packs its panel
  // `local`.
  auto pack_right = [&](uint32_t nc_panel0, uint32_t local, float* packed, ExponentRange* ranges) {
    pack<Kernel, kNr>(args, right, (nc_panel0 + local) * kNr, k_tiles, packed + local * k_padded * kNr,
                      &ranges[std::size_t(local) * k_tiles]);
  };

  // Each member's share of the work (the crew's loops end at its barrier).
  auto work = [&](const Crew& crew) {
    const numerics::FlushToZero flush_to_zero;
    thread_local Workspace<float> accumulator_workspace;
    float* const accumulators = accumulator_workspace.get(std::size_t(kMc) * kNc);

    if (left_in_place) {
      crew.share_static(scan_groups, [&](uint32_t group) {
        const uint32_t panel = group * scan_panels, panels = std::min(scan_panels, row_panels - panel);
        range_in_place<Kernel>(args, left, panel * kMr, panels * kMr, kMr, k_tiles,
                               &left_ranges[std::size_t(panel) * k_tiles]);
      });
    } else if constexpr (Kernel::kPacksLeft) {
      crew.share_static(row_panels, [&](uint32_t panel) {
        pack<Kernel, kMr>(args, left, panel * kMr, k_tiles, left_packed + panel * k_padded * kMr,
                          &left_ranges[std::size_t(panel) * k_tiles]);
      });
    }

    // Row block `block` against the packed right panels [nc_panel0,
    // nc_panel0 + nc_panels): all K tiles, then the output stage.
    auto compute = [&](uint32_t block, uint32_t nc_panel0, uint32_t nc_panels, const float* right_packed,
                       const ExponentRange* right_ranges) {
      const uint32_t panel0 = block * panels_per_mc;
      const uint32_t mc_panels = std::min(panels_per_mc, row_panels - panel0);
      auto accumulator = [&](uint32_t i, uint32_t j) {
        return accumulators + (std::size_t(i) * panels_per_nc + j) * kMr * kNr;
      };
      // The part of panel pair (i, j) inside the nest's rows and columns.
      auto rows_in = [&](uint32_t i) { return std::min(kMr, rows - std::min(rows, (panel0 + i) * kMr)); };
      auto cols_in = [&](uint32_t j) { return std::min(kNr, cols - std::min(cols, (nc_panel0 + j) * kNr)); };
      // A panel pair the micro-kernel of its last K tile finishes into C.
      auto direct = [&](uint32_t i, uint32_t j) {
        return !bf16_output && !transposed &&
               (Kernel::kFinishesPartialBlocks || (rows_in(i) == kMr && cols_in(j) == kNr));
      };
      // Calls whole8(accumulators, m, n) for each 8 accumulators of a
      // panel row that lie inside C (row m, columns n..n+7) and one(element,
      // m, n) for each of the rest inside C, in the panel pairs (i, j) that
      // `chosen` picks. Transposed, everything goes through one().
      auto for_each_output = [&](auto whole8, auto one, auto chosen) {
        for (uint32_t i = 0; i < mc_panels; ++i)
          for (uint32_t j = 0; j < nc_panels; ++j) {
            if (!chosen(i, j)) continue;
            for (uint32_t r = 0; r < rows_in(i); ++r) {
              const uint32_t row = (panel0 + i) * kMr + r, col0 = (nc_panel0 + j) * kNr;
              float* values = accumulator(i, j) + r * kNr;
              uint32_t c = 0;
              if (!transposed)
                for (; c + 8 <= cols_in(j); c += 8) whole8(values + c, row, col0 + c);
              for (; c < cols_in(j); ++c) {
                if (transposed)
                  one(values[c], col0 + c, row);
                else
                  one(values[c], row, col0 + c);
              }
            }
          }
      };
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
        // The kernels leave out the rows that pad a short K tile, whose +0
        // products turn a column sum of -0 into +0. acc + (sum + 0) is
        // (acc + 0) + sum for every acc and sum, so the accumulators take
        // the +0 instead: it matters only where both are -0.
        const bool padded = depth < tile && !from_zero;
        for (uint32_t j = 0; j < nc_panels; ++j) {
          const float* right_tile = right_packed + (j * k_padded + uint64_t(t) * tile) * kNr;
          const ExponentRange& right_range = right_ranges[std::size_t(j) * k_tiles + t];
          for (uint32_t i = 0; i < mc_panels; ++i) {
            const uint32_t panel = panel0 + i;
            const float* left_tile =
                left_in_place ? nullptr : left_packed + (panel * k_padded + uint64_t(t) * tile) * kMr;
            const Finish finish{&args, panel * kMr, (nc_panel0 + j) * kNr, rows_in(i), cols_in(j)};
            const Finish* finishing = last && direct(i, j) ? &finish : nullptr;
            const bool fused = fma_safe(left_ranges[std::size_t(panel) * k_tiles + t], right_range);
            if (padded) add_zero(accumulator(i, j), kMr * kNr);
            if constexpr (Kernel::kReadsLeftInPlace) {
              if (left_in_place) {
                const uint8_t* rows0 = left.at(uint64_t(panel) * kMr, uint64_t(t) * tile);
                const uint64_t lda_bytes = uint64_t(args.lda) * sizeof(bf16_t);
                const auto run =
                    fused ? Kernel::template run_in_place<true> : Kernel::template run_in_place<false>;
                run(rows0, lda_bytes, rows_in(i), cols_in(j), right_tile, depth, accumulator(i, j), from_zero,
                    finishing);
                continue;
              }
            }
            if constexpr (Kernel::kPacksLeft) {
              if (fused)
                Kernel::template run<true>(left_tile, right_tile, depth, accumulator(i, j), from_zero,
                                           finishing);
              else
                Kernel::template run<false>(left_tile, right_tile, depth, accumulator(i, j), from_zero,
                                            finishing);
            }
          }
        }
      }
      auto rest = [&](uint32_t i, uint32_t j) { return !direct(i, j); };
      if (transposed) {
        for (uint32_t i = 0; i < mc_panels; ++i)
          for (uint32_t j = 0; j < nc_panels; ++j)
            store_transposed<kMr, kNr>(args, accumulator(i, j), (panel0 + i) * kMr, (nc_panel0 + j) * kNr);
      } else if (bf16_output) {
        for_each_output(by_one(store_one), store_one, rest);
      } else {
        for_each_output(store8, store_one, rest);
      }
    };

    if (split_columns) {
      thread_local Workspace<float> right_workspace;
      thread_local Workspace<ExponentRange> right_range_workspace;
      float* const right_packed = right_workspace.get(group_panels * k_padded * kNr);
      ExponentRange* const right_ranges = right_range_workspace.get(std::size_t(group_panels) * k_tiles);
      // (the barrier above: the left operand is packed)
      const uint32_t groups = (col_panels + group_panels - 1) / group_panels;
      crew.share_static(groups, [&](uint32_t group) {
        const uint32_t nc_panel0 = group * group_panels;
        const uint32_t nc_panels = std::min(group_panels, col_panels - nc_panel0);
        for (uint32_t local = 0; local < nc_panels; ++local)
          pack_right(nc_panel0, local, right_packed, right_ranges);
        for (uint32_t block = 0; block < row_blocks; ++block)
          compute(block, nc_panel0, nc_panels, right_packed, right_ranges);
      });
      return;
    }
    for (uint32_t nc_panel0 = 0; nc_panel0 < col_panels; nc_panel0 += panels_per_nc) {
      const uint32_t nc_panels = std::min(panels_per_nc, col_panels - nc_panel0);
      crew.share_static(nc_panels, [&](uint32_t local) {
        pack_right(nc_panel0, local, shared_right, shared_right_ranges);
      });
      // (the barrier: the block is packed before anyone uses it)
      crew.share_dynamic(row_blocks, [&](uint32_t block) {
        compute(block, nc_panel0, nc_panels, shared_right, shared_right_ranges);
      });
      // (the barrier: everyone is done with this block)
    }
  };
  ThreadTeam::of_this_thread().run(threads, work);
}

// Whether the nest computes C's transpose: when that pads the product to
// clearly fewer kMr x kNr blocks' worth of work (C with fewer columns than
// the kernel has, and more rows).
template <class Kernel>
bool transpose_pays(const FastGemmArgs& args) {
  // C no wider than one column panel: a kernel that reads A in place
  // packs nothing but B's few columns, which costs less than any padding.
  if (Kernel::kReadsLeftInPlace && args.n <= Kernel::kNr) return false;
  auto padded = [](uint64_t rows, uint64_t cols) {
    return (rows + Kernel::kMr - 1) / Kernel::kMr * Kernel::kMr *
           ((cols + Kernel::kNr - 1) / Kernel::kNr * Kernel::kNr);
  };
  return 4 * padded(args.n, args.m) < 3 * padded(args.m, args.n);
}

template <class Kernel>
void blocked_gemm(const FastGemmArgs& args, uint32_t threads, FastGemmOrder order) {
  const bool transposed =
      order == FastGemmOrder::kAuto ? transpose_pays<Kernel>(args) : order == FastGemmOrder::kTransposed;
  blocked_gemm<Kernel>(args, threads, transposed);
}

// The AVX-512 kernels: C of few columns in pairs of lanes, unless C's
// transpose is asked for; else 8 x 32 blocks.
void avx512_gemm(const FastGemmArgs& args, uint32_t threads, FastGemmOrder order) {
  if (args.n <= Avx512PairKernel::kMaxCols && order != FastGemmOrder::kTransposed)
    return blocked_gemm<Avx512PairKernel>(args, threads, /*transposed=*/false);
  blocked_gemm<Avx512Kernel>(args, threads, order);
}

#endif  // SYSTOLE_HAVE_X86

}  // namespace

bool fast_gemm_supports(FastGemmIsa isa) {
  switch (isa) {
    case FastGemmIsa::kAuto:
    case FastGemmIsa::kPortable:
      return true;
#if SYSTOLE_HAVE_X86
    case FastGemmIsa::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case FastGemmIsa::kAvx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && fast_gemm_supports(FastGemmIsa::kAvx2);
#else
    default:
      return false;
#endif
  }
  return false;
}

FastGemmArgs fast_gemm_args(const spec::GemmDescriptor& d, const uint8_t* a, const uint8_t* b, uint8_t* c,
                            const uint8_t* bias, uint32_t k_tile) {
  FastGemmArgs args;
  args.a = a;
  args.b = b;
  args.c = c;
  args.bias = (d.flags & spec::flag::kBias) ? bias : nullptr;
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

uint32_t TeamSizer::size_class(uint64_t macs) { return 63 - uint32_t(__builtin_clzll(macs | 1)); }

uint32_t TeamSizer::team(uint64_t macs) const {
  if (threads_ == 1 || macs < kMinMacs) return 1;
  const Trials& trials = classes_[size_class(macs)];
  if (trials.count[0] < kTrials || trials.count[1] < kTrials)
    return trials.count[0] <= trials.count[1] ? 1 : threads_;
  return trials.best[1] < trials.best[0] ? threads_ : 1;
}

bool TeamSizer::timing(uint64_t macs, uint32_t team) const {
  return threads_ > 1 && macs >= kMinMacs && classes_[size_class(macs)].count[team == 1 ? 0 : 1] < kTrials;
}

void TeamSizer::record(uint64_t macs, uint32_t team, double seconds) {
  if (!timing(macs, team)) return;
  Trials& trials = classes_[size_class(macs)];
  const int which = team == 1 ? 0 : 1;
  ++trials.count[which];
  trials.best[which] = std::min(trials.best[which], seconds / double(macs));
}

void fast_gemm(const FastGemmArgs& args, uint32_t threads, FastGemmIsa isa, FastGemmOrder order) {
  if (isa == FastGemmIsa::kAuto) {
    static const FastGemmIsa best = fast_gemm_supports(FastGemmIsa::kAvx512) ? FastGemmIsa::kAvx512
                                    : fast_gemm_supports(FastGemmIsa::kAvx2) ? FastGemmIsa::kAvx2
                                                                             : FastGemmIsa::kPortable;
    isa = best;
  }
  if (!fast_gemm_supports(isa)) isa = FastGemmIsa::kPortable;
#if SYSTOLE_HAVE_X86
  threads = std::max(threads, 1u);
  if (isa == FastGemmIsa::kAvx512) return avx512_gemm(args, threads, order);
  if (isa == FastGemmIsa::kAvx2) return blocked_gemm<Avx2Kernel>(args, threads, order);
#endif
  portable_gemm(args);
}

}  // namespace systole::sw_emu
