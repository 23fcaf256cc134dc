// SPDX-License-Identifier: Apache-2.0
// The vector engine's work as descriptors that fit its limits: the planner
// beside plan_gemm. Every vector descriptor the runtime writes comes from
// plan_vector, which sets the fields an opcode reads (and leaves the others
// zero, as validation asks) and splits work longer than one descriptor may
// be.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "systole/descriptor.h"
#include "systole/status.h"
#include "systole/vector_ops.h"

namespace systole {

// One vector operation over device memory (hw/spec/systole/descriptor.h
// gives each opcode's operands and arithmetic).
struct VectorProblem {
  spec::Opcode opcode = spec::Opcode::kAxpby;
  // Those the opcode reads (axpby, sgd: alpha and beta; adam: all four),
  // and sgd's Nesterov flag; the rest are not written.
  spec::VectorScalars scalars;
  // to_bf16: z = x^T (z[c][r] = x_r[c]).
  bool transposed = false;
  // Elements per vector: per row of x for sum and to_bf16. Any length.
  std::size_t n = 0;
  // sum, to_bf16: the rows of x, `stride` elements apart (0: n).
  uint32_t rows = 0;
  std::size_t stride = 0;
  // Byte addresses of x, y, z and w; those the opcode does not use are
  // ignored.
  uint64_t x = 0, y = 0, z = 0, w = 0;
};

// The descriptors for `problem`, in execution order. Elementwise work and
// sums run in pieces of at most kMaxVectorElements elements (a sum's pieces
// are column ranges, each summed in row order, so the bits are those of one
// descriptor); to_bf16 runs in pieces of at most kMaxVectorRows rows (a
// single row in pieces of its elements). An error names a problem no pieces
// can hold: no elements, a sum of more rows than a descriptor may read (its
// order would change), a stride shorter than a row, a transposed to_bf16 of
// more rows or longer rows than one descriptor takes.
Result<std::vector<spec::VectorDescriptor>> plan_vector(const VectorProblem& problem);

// plan_vector's descriptors appended to `out` as command records
// (spec::record_of), the form a launch takes.
Status append_vector_plan(const VectorProblem& problem, std::vector<spec::CommandRecord>& out);

// Problems of one opcode, for the callers' brevity.
// y = alpha * x + beta * y over n elements (beta +0: y = alpha * x).
VectorProblem axpby_problem(float alpha, float beta, std::size_t n, uint64_t x, uint64_t y);
// z[j] = x_0[j] + ... + x_{rows-1}[j] for j < n, rows `stride` apart, from
// +0 in row order.
VectorProblem sum_problem(uint32_t rows, std::size_t n, std::size_t stride, uint64_t x, uint64_t z);
// z = f32_to_bf16(x) of rows x n values `stride` apart, packed (n x rows
// when transposed).
VectorProblem to_bf16_problem(uint32_t rows, std::size_t n, std::size_t stride, bool transposed, uint64_t x,
                              uint64_t z);

}  // namespace systole
