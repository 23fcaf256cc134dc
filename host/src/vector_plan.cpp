// SPDX-License-Identifier: Apache-2.0
// Vector descriptors from VectorProblems, split to the engine's limits.
#include "systole/vector_plan.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "systole/validate.h"

namespace systole {
namespace {

using spec::Opcode;

// The descriptor of elements [from, from + n) of rows [row, row + rows) of
// the problem: its fields as the opcode reads them, the rest zero.
spec::VectorDescriptor piece(const VectorProblem& p, std::size_t from, std::size_t n, std::size_t row,
                             uint32_t rows) {
  spec::VectorDescriptor d{};
  d.opcode = uint8_t(p.opcode);
  const spec::VectorOperands operands = spec::vector_operands(p.opcode);
  const bool by_rows = spec::vector_reads_rows(p.opcode);
  const std::size_t stride = p.stride ? p.stride : p.n;
  if (p.opcode == Opcode::kSgd && p.scalars.nesterov) d.flags |= spec::vector_flag::kNesterov;
  if (p.opcode == Opcode::kToBf16 && p.transposed) d.flags |= spec::vector_flag::kTranspose;
  d.n = uint32_t(n);
  if (by_rows) {
    d.rows = rows;
    d.stride = uint32_t(stride);
  }
  const float scalars[4] = {p.scalars.alpha, p.scalars.beta, p.scalars.gamma, p.scalars.delta};
  float* fields[4] = {&d.alpha, &d.beta, &d.gamma, &d.delta};
  for (uint32_t i = 0; i < spec::vector_scalar_count(p.opcode); ++i) *fields[i] = scalars[i];
  const uint64_t base[4] = {p.x, p.y, p.z, p.w};
  uint64_t* out[4] = {&d.x_addr, &d.y_addr, &d.z_addr, &d.w_addr};
  for (int i = 0; i < 4; ++i) {
    if (!operands.uses(i)) continue;
    const uint64_t element = spec::vector_element_bytes(p.opcode, i);
    uint64_t at = base[i];
    if (i == 0 && by_rows) {
      at += (row * stride + from) * element;  // x: the rows, stride apart
    } else if (p.opcode == Opcode::kToBf16) {
      // z packed: rows x n, or n x rows transposed (never split then).
      at += (row * p.n + from) * element;
    } else {
      at += from * element;
    }
    *out[i] = at;
  }
  return d;
}

Status invalid(const VectorProblem& p, const std::string& why) {
  const char* name = spec::opcode_name(uint8_t(p.opcode));
  return Status(StatusCode::kInvalidArgument,
                std::string("vector plan: ") + (name ? name : "an unknown opcode") + " of " +
                    std::to_string(p.rows) + " row(s) of " + std::to_string(p.n) + " values: " + why);
}

}  // namespace

Result<std::vector<spec::VectorDescriptor>> plan_vector(const VectorProblem& p) {
  if (!spec::is_vector_opcode(uint8_t(p.opcode))) return invalid(p, "not a vector-engine opcode");
  if (p.n == 0) return invalid(p, "no values");
  const bool by_rows = spec::vector_reads_rows(p.opcode);
  const std::size_t stride = p.stride ? p.stride : p.n;
  if (by_rows && p.rows == 0) return invalid(p, "no rows");
  if (by_rows && stride < p.n) return invalid(p, "row stride " + std::to_string(stride) + " is shorter");
  if (by_rows && stride > UINT32_MAX)
    return invalid(p, "row stride " + std::to_string(stride) + " is more than a descriptor holds");
  std::vector<spec::VectorDescriptor> plan;
  const std::size_t max_n = spec::kMaxVectorElements;
  if (p.opcode == Opcode::kToBf16) {
    // Rows in pieces; one row in pieces of its values.
    if (p.transposed && (p.rows > spec::kMaxVectorRows || p.n > max_n))
      return invalid(p, "a transposed copy must fit one descriptor");
    if (p.rows == 1) {
      for (std::size_t at = 0; at < p.n; at += max_n)
        plan.push_back(piece(p, at, std::min(max_n, p.n - at), 0, 1));
      return plan;
    }
    if (p.n > max_n) return invalid(p, "rows longer than one descriptor takes");
    for (std::size_t row = 0; row < p.rows; row += spec::kMaxVectorRows)
      plan.push_back(
          piece(p, 0, p.n, row, uint32_t(std::min<std::size_t>(spec::kMaxVectorRows, p.rows - row))));
    return plan;
  }
  if (by_rows && p.rows > spec::kMaxVectorRows)
    return invalid(p, "more rows than one sum reads (" + std::to_string(spec::kMaxVectorRows) + ")");
  for (std::size_t at = 0; at < p.n; at += max_n)
    plan.push_back(piece(p, at, std::min(max_n, p.n - at), 0, p.rows));
  return plan;
}

Status append_vector_plan(const VectorProblem& problem, std::vector<spec::CommandRecord>& out) {
  auto plan = plan_vector(problem);
  if (!plan.ok()) return plan.status();
  for (const spec::VectorDescriptor& d : *plan) out.push_back(spec::record_of(d));
  return ok_status();
}

VectorProblem axpby_problem(float alpha, float beta, std::size_t n, uint64_t x, uint64_t y) {
  VectorProblem p;
  p.opcode = Opcode::kAxpby;
  p.scalars.alpha = alpha;
  p.scalars.beta = beta;
  p.n = n;
  p.x = x;
  p.y = y;
  return p;
}

VectorProblem sum_problem(uint32_t rows, std::size_t n, std::size_t stride, uint64_t x, uint64_t z) {
  VectorProblem p;
  p.opcode = Opcode::kSum;
  p.rows = rows;
  p.n = n;
  p.stride = stride;
  p.x = x;
  p.z = z;
  return p;
}

VectorProblem to_bf16_problem(uint32_t rows, std::size_t n, std::size_t stride, bool transposed, uint64_t x,
                              uint64_t z) {
  VectorProblem p;
  p.opcode = Opcode::kToBf16;
  p.rows = rows;
  p.n = n;
  p.stride = stride;
  p.transposed = transposed;
  p.x = x;
  p.z = z;
  return p;
}

}  // namespace systole
