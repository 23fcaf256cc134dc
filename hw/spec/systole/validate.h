// SPDX-License-Identifier: Apache-2.0
// Which error a malformed command list gets, and in which order the checks
// run. Every model (HLS kernel, fast sw_emu path, RTL) implements exactly this
// precedence, so a bad list reports the same code and index everywhere.
#pragma once

#include <cstdint>

#include "systole/descriptor.h"
#include "systole/spec.h"

namespace systole::spec {

// True when [addr, addr + bytes) lies inside [0, mem_bytes).
constexpr bool in_range(uint64_t addr, uint64_t bytes, uint64_t mem_bytes) {
  return addr <= mem_bytes && bytes <= mem_bytes - addr;
}

// Bytes spanned by a row-major `rows` x `cols` matrix with leading dimension
// `ld` (rows, cols >= 1; ld >= cols): from its first to its last element.
constexpr uint64_t matrix_span_bytes(uint32_t rows, uint32_t cols, uint32_t ld, uint32_t element_bytes) {
  return (uint64_t(rows - 1) * ld + cols) * element_bytes;
}

// Checks the header. The list itself sits at the base of the kernel's `cmd`
// port, so its placement is the driver's to check, not the kernel's.
constexpr ErrorCode validate_header(const CommandListHeader& header, const ArrayShape& shape) {
  if (header.magic != kCommandListMagic) return ErrorCode::kBadMagic;
  if (header.version_major != kVersionMajor) return ErrorCode::kBadVersion;
  if (header.count == 0 || header.count > shape.max_descriptors()) return ErrorCode::kBadCount;
  for (uint32_t word : header.reserved)
    if (word != 0) return ErrorCode::kBadFlags;
  return ErrorCode::kOk;
}

// Checks one GEMM descriptor: opcode, flags, dimensions, leading dimensions,
// alignment, then address ranges.
constexpr ErrorCode validate_descriptor(const GemmDescriptor& d, uint64_t mem_bytes,
                                        const ArrayShape& shape) {
  if (d.opcode != static_cast<uint8_t>(Opcode::kGemm)) return ErrorCode::kBadOpcode;
  if ((d.flags & ~flag::kAll) != 0 || d.reserved0 != 0 || d.reserved1 != 0) return ErrorCode::kBadFlags;
  if (d.m == 0 || d.n == 0 || d.k == 0 || d.m > shape.max_m() || d.n > shape.max_n() || d.k > shape.max_k())
    return ErrorCode::kBadDimension;
  if (d.lda < d.k || d.ldb < d.n || d.ldc < d.n) return ErrorCode::kBadLeadingDim;

  const uint32_t c_bytes = output_element_bytes(d.flags);
  const bool has_bias = (d.flags & flag::kBias) != 0;
  if (d.a_addr % kBf16Bytes != 0 || d.b_addr % kBf16Bytes != 0 || d.c_addr % c_bytes != 0 ||
      (has_bias && d.bias_addr % kFp32Bytes != 0))
    return ErrorCode::kMisalignedAddress;

  if (!in_range(d.a_addr, matrix_span_bytes(d.m, d.k, d.lda, kBf16Bytes), mem_bytes) ||
      !in_range(d.b_addr, matrix_span_bytes(d.k, d.n, d.ldb, kBf16Bytes), mem_bytes) ||
      !in_range(d.c_addr, matrix_span_bytes(d.m, d.n, d.ldc, c_bytes), mem_bytes) ||
      (has_bias && !in_range(d.bias_addr, uint64_t(d.n) * kFp32Bytes, mem_bytes)))
    return ErrorCode::kAddressOutOfRange;
  return ErrorCode::kOk;
}

// The operands of a vector descriptor, as validation and the models see
// them: which of x, y, z, w an opcode reads and writes.
struct VectorOperands {
  bool read[4] = {};
  bool written[4] = {};
  bool uses(int i) const { return read[i] || written[i]; }
};

constexpr VectorOperands vector_operands(Opcode op) {
  // x, y, z, w
  switch (op) {
    case Opcode::kAxpby:
      return {{true, true, false, false}, {false, true, false, false}};
    case Opcode::kMul:
    case Opcode::kReluGrad:
      return {{true, true, false, false}, {false, false, true, false}};
    case Opcode::kRelu:
    case Opcode::kSum:
    case Opcode::kToBf16:
      return {{true, false, false, false}, {false, false, true, false}};
    case Opcode::kSgd:
      return {{true, true, true, false}, {false, true, true, false}};
    case Opcode::kAdam:
      return {{true, true, true, true}, {false, true, true, true}};
    case Opcode::kGemm:
      break;
  }
  return {};
}

// The scalars an opcode reads (alpha, beta, gamma, delta); the rest must be
// zero.
constexpr uint32_t vector_scalar_count(Opcode op) {
  switch (op) {
    case Opcode::kAxpby:
    case Opcode::kSgd:
      return 2;
    case Opcode::kAdam:
      return 4;
    default:
      return 0;
  }
}

constexpr bool is_vector_opcode(uint8_t opcode) {
  return opcode >= uint8_t(Opcode::kAxpby) && opcode <= uint8_t(Opcode::kToBf16);
}

// Whether an opcode reads x as `rows` vectors `stride` apart.
constexpr bool vector_reads_rows(Opcode op) { return op == Opcode::kSum || op == Opcode::kToBf16; }

// Bytes of one element of an operand: fp32, but to_bf16's output.
constexpr uint32_t vector_element_bytes(Opcode op, int operand) {
  return op == Opcode::kToBf16 && operand == 2 ? kBf16Bytes : kFp32Bytes;
}

// Bytes each operand of a vector descriptor spans (x of sum and to_bf16
// spans its rows; to_bf16's z holds every row, packed).
constexpr uint64_t vector_operand_bytes(const VectorDescriptor& d, int operand) {
  const Opcode op = Opcode(d.opcode);
  if (operand == 0 && vector_reads_rows(op)) return matrix_span_bytes(d.rows, d.n, d.stride, kFp32Bytes);
  if (operand == 2 && op == Opcode::kToBf16) return uint64_t(d.rows) * d.n * kBf16Bytes;
  return uint64_t(d.n) * kFp32Bytes;
}

// The flags an opcode takes.
constexpr uint8_t vector_allowed_flags(Opcode op) {
  return op == Opcode::kSgd ? vector_flag::kNesterov : op == Opcode::kToBf16 ? vector_flag::kTranspose : 0;
}

// Checks one vector descriptor, in the order GEMM's checks run: opcode
// (and the engine's presence), flags and unused fields, dimensions, the
// stride, alignment, address ranges; last, that each output is either the
// same buffer as an input or overlaps no other operand.
constexpr ErrorCode validate_vector_descriptor(const VectorDescriptor& d, uint64_t mem_bytes,
                                               const ArrayShape& shape) {
  if (!is_vector_opcode(d.opcode) || (shape.features & feature::kVectorEngine) == 0)
    return ErrorCode::kBadOpcode;
  const Opcode op = Opcode(d.opcode);
  const VectorOperands operands = vector_operands(op);
  const uint64_t addr[4] = {d.x_addr, d.y_addr, d.z_addr, d.w_addr};
  const float scalars[4] = {d.alpha, d.beta, d.gamma, d.delta};
  if ((d.flags & ~vector_allowed_flags(op)) != 0 || d.reserved0 != 0) return ErrorCode::kBadFlags;
  for (uint32_t i = vector_scalar_count(op); i < 4; ++i)
    if (__builtin_bit_cast(uint32_t, scalars[i]) != 0) return ErrorCode::kBadFlags;  // -0 and NaN too
  for (int i = 0; i < 4; ++i)
    if (!operands.uses(i) && addr[i] != 0) return ErrorCode::kBadFlags;
  const bool rows = vector_reads_rows(op);
  if (!rows && (d.rows != 0 || d.stride != 0)) return ErrorCode::kBadFlags;

  if (d.n == 0 || d.n > kMaxVectorElements || (rows && (d.rows == 0 || d.rows > kMaxVectorRows)))
    return ErrorCode::kBadDimension;
  if (rows && d.stride < d.n) return ErrorCode::kBadLeadingDim;
  for (int i = 0; i < 4; ++i)
    if (operands.uses(i) && addr[i] % vector_element_bytes(op, i) != 0) return ErrorCode::kMisalignedAddress;
  for (int i = 0; i < 4; ++i)
    if (operands.uses(i) && !in_range(addr[i], vector_operand_bytes(d, i), mem_bytes))
      return ErrorCode::kAddressOutOfRange;

  for (int out = 0; out < 4; ++out) {
    if (!operands.written[out]) continue;
    for (int other = 0; other < 4; ++other) {
      if (other == out || !operands.uses(other)) continue;
      // An output may be the very buffer an input is (in place), not a
      // part of one, and never another output.
      const bool same =
          addr[other] == addr[out] && vector_operand_bytes(d, other) == vector_operand_bytes(d, out);
      if (same && !operands.written[other]) continue;
      const bool disjoint = addr[other] + vector_operand_bytes(d, other) <= addr[out] ||
                            addr[out] + vector_operand_bytes(d, out) <= addr[other];
      if (!disjoint) return ErrorCode::kOverlappingBuffers;
    }
  }
  return ErrorCode::kOk;
}

// Checks one descriptor of either kind, by its opcode byte.
inline ErrorCode validate_record(const uint8_t* record, uint64_t mem_bytes, const ArrayShape& shape) {
  if (is_vector_opcode(record[0]))
    return validate_vector_descriptor(decode<VectorDescriptor>(record), mem_bytes, shape);
  return validate_descriptor(decode<GemmDescriptor>(record), mem_bytes, shape);
}

}  // namespace systole::spec
