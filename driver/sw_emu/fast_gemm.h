// SPDX-License-Identifier: Apache-2.0
// The fast bit-exact GEMM of the sw_emu backend: the same bits as the HLS
// kernel (hw/spec/NUMERICS.md), computed with AVX2/FMA on several threads.
#pragma once

#include <cstdint>

#include "systole/descriptor.h"

namespace systole::sw_emu {

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

// A validated descriptor's operands, with each port at its base pointer.
FastGemmArgs fast_gemm_args(const spec::GemmDescriptor& d, const uint8_t* a_port, const uint8_t* b_port,
                            uint8_t* c_port, uint32_t k_tile);

enum class FastGemmIsa {
  kAuto,      // AVX2 + FMA when the CPU has them, else portable
  kPortable,  // plain C++ in the contract's order (slow; for other hosts)
};

void fast_gemm(const FastGemmArgs& args, uint32_t threads, FastGemmIsa isa = FastGemmIsa::kAuto);

}  // namespace systole::sw_emu
