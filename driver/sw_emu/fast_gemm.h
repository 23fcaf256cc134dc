// SPDX-License-Identifier: Apache-2.0
// The fast bit-exact GEMM of the sw_emu backend: the same bits as the HLS
// kernel (hw/spec/NUMERICS.md), computed with AVX-512 or AVX2/FMA on
// several threads.
#pragma once

#include <cstdint>

#include "systole/descriptor.h"

namespace systole::sw_emu {

// Bytes past A's last value that the engine may read (and not use): the
// memory behind A must be readable that far.
inline constexpr uint32_t kFastGemmReadSlack = 2;

// One GEMM descriptor resolved to host pointers (device memory is host memory
// in sw_emu). Pointers are to the first element and need no alignment.
struct FastGemmArgs {
  const uint8_t* a = nullptr;     // bf16, M x K, leading dimension lda
  const uint8_t* b = nullptr;     // bf16, K x N, leading dimension ldb
  uint8_t* c = nullptr;           // fp32 or bf16 (flags), M x N, ldc
  const uint8_t* bias = nullptr;  // fp32 [N], used with flag::kBias
  uint32_t m = 0, n = 0, k = 0;
  uint32_t lda = 0, ldb = 0, ldc = 0;
  uint8_t flags = 0;    // spec::flag::*
  uint32_t k_tile = 0;  // the array's row count
};

// A validated descriptor, given where its operands are (`bias` unused
// without the flag).
FastGemmArgs fast_gemm_args(const spec::GemmDescriptor& d, const uint8_t* a, const uint8_t* b, uint8_t* c,
                            const uint8_t* bias, uint32_t k_tile);

// The code that computes it. Every choice gives the same bits.
enum class FastGemmIsa {
  kAuto,      // the widest of the others this CPU has
  kAvx512,    // AVX-512 F, BW and VL: 8 x 32 blocks of C, 16 x 16 in pairs for 12 columns or fewer
  kAvx2,      // AVX2 + FMA: 6 x 16 blocks
  kPortable,  // plain C++ in the contract's order (slow; for other hosts)
};

// Whether this CPU (and OS) runs `isa`.
bool fast_gemm_supports(FastGemmIsa isa);

// The layout of the blocked loop nest: C, or its transpose C^T = B^T A^T
// (chosen when C has too few columns to fill the kernel's blocks).
enum class FastGemmOrder { kAuto, kDirect, kTransposed };

// How many threads a launch's products run on, learnt by timing them. A
// second thread pays only where the work it takes covers fetching its
// share of the operands, which the host has just written on its own core,
// into its core's cache, and what that costs differs several fold between
// machines (the 64 x 256 x 784 product through DeviceMatmul on two
// threads: 1.5 times one thread's time on one 2-core VM, 0.57 times on
// another). So for products of each size (a power of two of
// multiply-adds) the sizer tries one thread and the whole team kTrials
// times each, then keeps whichever ran faster per multiply-add. Every team
// size gives the same bits. Products under kMinMacs (some 20 us on one
// thread) stay on one thread untimed.
// Not thread-safe: one per engine, whose launches run one at a time.
class TeamSizer {
 public:
  static constexpr uint64_t kMinMacs = uint64_t(1) << 20;
  static constexpr uint32_t kTrials = 3;

  explicit TeamSizer(uint32_t threads) : threads_(threads < 1 ? 1 : threads) {}

  // The team for a product of `macs` multiply-adds.
  uint32_t team(uint64_t macs) const;
  // Whether record() wants the time of a product of `macs` on `team`: only
  // while that team's trials for its size last, so that a decided size
  // costs no clock reads.
  bool timing(uint64_t macs, uint32_t team) const;
  // How long a product of `macs` took on a team of `team` (as team() gave).
  void record(uint64_t macs, uint32_t team, double seconds);

 private:
  struct Trials {
    uint32_t count[2] = {0, 0};       // one thread, the whole team
    double best[2] = {1e300, 1e300};  // seconds per multiply-add
  };
  static uint32_t size_class(uint64_t macs);

  uint32_t threads_;
  Trials classes_[64];
};

// Computes the descriptor's product on `threads` threads. An `isa` the CPU
// does not have runs the portable code.
void fast_gemm(const FastGemmArgs& args, uint32_t threads, FastGemmIsa isa = FastGemmIsa::kAuto,
               FastGemmOrder order = FastGemmOrder::kAuto);

}  // namespace systole::sw_emu
