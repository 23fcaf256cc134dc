// SPDX-License-Identifier: Apache-2.0
// Tiling of a GEMM of any size into descriptors that fit what the device
// reports, and the encoding of descriptors into command lists.
#pragma once

#include <cstdint>
#include <vector>

#include "systole/descriptor.h"
#include "systole/driver.h"

namespace systole {

// A row-major matrix in device memory.
struct DeviceMatrix {
  uint64_t address = 0;
  uint32_t ld = 0;  // leading dimension, in elements
};

// C[M x N] = A[M x K] * B[K x N] (+ bias) (ReLU), A and B bf16, C fp32
// (or bf16 when `output_bf16`, which needs K <= max_k: a longer K chains
// blocks through fp32 partial sums, so convert on the host instead; the bits
// are the same).
struct GemmProblem {
  uint32_t m = 0, n = 0, k = 0;
  DeviceMatrix a, b, c;
  uint64_t bias_address = 0;  // fp32 [N]
  bool bias = false;
  bool relu = false;
  bool output_bf16 = false;
  // C += A B: the first K block accumulates into C's fp32 values as well
  // (the same bits as one product with the earlier K in front).
  bool accumulate = false;
};

// Descriptors for `problem`, in execution order: for each block of C (at most
// max_m x max_n), its K blocks (at most max_k) back to back, the first
// without (unless the problem accumulates) and the rest with
// accumulate-into-C; bias and ReLU on the last.
Result<std::vector<spec::GemmDescriptor>> plan_gemm(const DeviceInfo& device, const GemmProblem& problem);

// One command list of `count` records, encoded into `out`
// (spec::command_list_bytes(count) bytes: a device buffer's host view).
void encode_command_list(const spec::CommandRecord* records, std::size_t count, uint8_t* out);

// Command lists of at most `max_descriptors` each, encoded for the device:
// of GEMM descriptors, or of records of either kind (spec::record_of).
std::vector<std::vector<uint8_t>> encode_command_lists(const std::vector<spec::CommandRecord>& records,
                                                       uint32_t max_descriptors);
std::vector<std::vector<uint8_t>> encode_command_lists(const std::vector<spec::GemmDescriptor>& descriptors,
                                                       uint32_t max_descriptors);

}  // namespace systole
