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

// How many of `threads` threads pay for the descriptor's product when the
// host has just written its operands (a launch's): one, unless the work
// covers fetching the operands into the other threads' caches.
uint32_t fast_gemm_team(const FastGemmArgs& args, uint32_t threads);

// Computes the descriptor's product on `threads` threads. An `isa` the CPU
// does not have runs the portable code.
void fast_gemm(const FastGemmArgs& args, uint32_t threads, FastGemmIsa isa = FastGemmIsa::kAuto,
               FastGemmOrder order = FastGemmOrder::kAuto);

}  // namespace systole::sw_emu
