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

}  // namespace systole::spec
