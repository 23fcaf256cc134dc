// SPDX-License-Identifier: Apache-2.0
// Binary format of a command list in device memory: a 64-byte header followed
// by 64-byte GEMM descriptors. Little-endian, one AXI beat per record.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "systole/spec.h"

namespace systole::spec {

inline constexpr uint32_t kCommandListMagic = 0x4C434D53;  // "SMCL"

struct CommandListHeader {
  uint32_t magic;          // kCommandListMagic
  uint16_t version_major;  // kVersionMajor
  uint16_t version_minor;  // any; newer minors only add reserved-field uses
  uint32_t count;          // number of descriptors that follow
  uint32_t reserved[13];   // must be zero
};

enum class Opcode : uint8_t {
  kGemm = 1,
};

// Flags of a GEMM descriptor, one row each: X(Name, name, bit). The
// constants flag::k<Name>, the names and the SV package's Flag<Name> are
// made from it.
#define SYSTOLE_FLAGS(X)                                          \
  X(Accumulate, accumulate, 0)  /* C = C + A*B (C read first) */  \
  X(Bias, bias, 1)              /* add fp32 bias[N] per column */ \
  X(Relu, relu, 2)              /* max(x, +0) after the bias */   \
  X(OutputBf16, output_bf16, 3) /* C is bf16 (else fp32) */

namespace flag {
#define SYSTOLE_FLAG_CONSTANT(Name, name, bit) inline constexpr uint8_t k##Name = 1u << (bit);
SYSTOLE_FLAGS(SYSTOLE_FLAG_CONSTANT)
#undef SYSTOLE_FLAG_CONSTANT
// Every defined flag; the others are reserved (kBadFlags).
inline constexpr uint8_t kAll = 0
#define SYSTOLE_FLAG_BIT(Name, name, bit) | k##Name
    SYSTOLE_FLAGS(SYSTOLE_FLAG_BIT)
#undef SYSTOLE_FLAG_BIT
    ;
}  // namespace flag

struct Flag {
  const char* name;  // "output_bf16"
  uint8_t bit;
};
inline constexpr Flag kFlags[] = {
#define SYSTOLE_FLAG_ROW(Name, name, bit) {#name, bit},
    SYSTOLE_FLAGS(SYSTOLE_FLAG_ROW)
#undef SYSTOLE_FLAG_ROW
};

// C[M x N] (+)= A[M x K] * B[K x N] (+ bias) (ReLU), all row-major.
// A and B are bf16; C is fp32 or bf16 (kOutputBf16), read in that same
// precision when kAccumulate is set; bias is fp32. Leading dimensions count
// elements. Addresses are byte addresses in device memory, aligned to their
// element size. C must not overlap A, B or bias: if it does, the kernel
// still ends with the status it would have had, but what C then holds is
// unspecified (models may order reads and writes differently). A later
// descriptor may read an earlier one's C: descriptors run in order.
struct GemmDescriptor {
  uint8_t opcode;      // Opcode::kGemm
  uint8_t flags;       // flag::*
  uint16_t reserved0;  // must be zero
  uint32_t m;
  uint32_t n;
  uint32_t k;
  uint32_t lda;        // >= k
  uint32_t ldb;        // >= n
  uint32_t ldc;        // >= n
  uint32_t reserved1;  // must be zero
  uint64_t a_addr;
  uint64_t b_addr;
  uint64_t c_addr;
  uint64_t bias_addr;  // read only with flag::kBias
};

static_assert(sizeof(CommandListHeader) == kBeatBytes, "header is one beat");
static_assert(sizeof(GemmDescriptor) == kBeatBytes, "descriptor is one beat");
static_assert(offsetof(GemmDescriptor, m) == 4);
static_assert(offsetof(GemmDescriptor, lda) == 16);
static_assert(offsetof(GemmDescriptor, a_addr) == 32);
static_assert(offsetof(GemmDescriptor, bias_addr) == 56);
static_assert(offsetof(CommandListHeader, count) == 8);

// Byte size of a command list holding `count` descriptors.
constexpr uint64_t command_list_bytes(uint64_t count) {
  return sizeof(CommandListHeader) + count * sizeof(GemmDescriptor);
}

// Element sizes of the operands.
inline constexpr uint32_t kBf16Bytes = 2;
inline constexpr uint32_t kFp32Bytes = 4;

constexpr uint32_t output_element_bytes(uint8_t flags) {
  return (flags & flag::kOutputBf16) ? kBf16Bytes : kFp32Bytes;
}

// The records are stored little-endian; every supported host is little-endian
// too, so encoding is a byte copy (checked here, once).
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "command lists are little-endian; add byte swaps for this host");

template <class Record>
inline void encode(const Record& record, uint8_t* out) {
  std::memcpy(out, &record, sizeof(Record));
}

template <class Record>
inline Record decode(const uint8_t* in) {
  Record record;
  std::memcpy(&record, in, sizeof(Record));
  return record;
}

}  // namespace systole::spec
