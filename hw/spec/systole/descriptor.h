// SPDX-License-Identifier: Apache-2.0
// Binary format of a command list in device memory: a 64-byte header followed
// by 64-byte descriptors (GEMM, or an operation of the vector engine).
// Little-endian, one AXI beat per record; byte 0 of a descriptor is its
// opcode.
#pragma once

#include <array>
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

// The operations, one row each: X(Name, name, value). kGemm runs on the
// array; the others on the vector engine (VectorDescriptor below), which a
// kernel has when its Features register says feature::kVectorEngine.
#define SYSTOLE_OPCODES(X)  \
  X(Gemm, gemm, 1)          \
  X(Axpby, axpby, 2)        \
  X(Mul, mul, 3)            \
  X(Relu, relu, 4)          \
  X(ReluGrad, relu_grad, 5) \
  X(Sum, sum, 6)            \
  X(Sgd, sgd, 7)            \
  X(Adam, adam, 8)          \
  X(ToBf16, to_bf16, 9)

enum class Opcode : uint8_t {
#define SYSTOLE_OPCODE_ENUM(Name, name, value) k##Name = value,
  SYSTOLE_OPCODES(SYSTOLE_OPCODE_ENUM)
#undef SYSTOLE_OPCODE_ENUM
};

// Name of an opcode ("relu_grad"), or nullptr for an unknown one.
const char* opcode_name(uint8_t opcode);

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

// One operation of the vector engine: fp32 elementwise work over vectors of
// `n` elements in device memory (NUMERICS.md gives each operation's
// arithmetic, in order). x is read through the a ports; y, z and w are read
// and written through the c ports (addresses are offsets from their group's
// base, as a GEMM's are). Which operands an opcode uses, and whether it
// writes them (an output may be the same buffer as one of its inputs; any
// other overlap with an output is kOverlappingBuffers):
//
//   axpby      y = alpha*x + beta*y      (beta = +0: y = alpha*x, y not read)
//   mul        z = x*y
//   relu       z = relu(x)
//   relu_grad  z = y > 0 ? x : +0        (x the gradient, y the layer's output)
//   sum        z[i] = x_0[i] + ... + x_{rows-1}[i], x_r at x + r*stride
//                                        (column sums of a rows x n matrix,
//                                        or the sum of rows equal buffers)
//   sgd        x gradient, y velocity, z weights; alpha learning rate,
//              beta momentum; flag kNesterov
//   adam       x gradient, y m, z v, w weights; alpha the step size with
//              both bias corrections, beta beta1, gamma beta2, delta epsilon
//   to_bf16    z = f32_to_bf16(x) of a rows x n matrix whose rows are
//              stride apart, written packed as bf16: rows x n, or n x rows
//              with flag kTranspose (z[c][r] = x_r[c]); the array's
//              operands made on the card from fp32 values kept there
//
// Fields an opcode does not use (scalars, addresses, rows and stride
// outside sum and to_bf16) must be zero (kBadFlags).
struct VectorDescriptor {
  uint8_t opcode;      // an Opcode other than kGemm
  uint8_t flags;       // vector_flag::*
  uint16_t reserved0;  // must be zero
  uint32_t n;          // elements per vector, 1 .. kMaxVectorElements
  uint32_t rows;       // sum, to_bf16: vectors (rows), 1 .. kMaxVectorRows
  uint32_t stride;     // sum, to_bf16: elements from one to the next, >= n
  float alpha, beta, gamma, delta;
  uint64_t x_addr, y_addr, z_addr, w_addr;
};

// Limits of a vector descriptor (every kernel with the engine).
inline constexpr uint32_t kMaxVectorElements = 1u << 26;  // 256 MiB of fp32
inline constexpr uint32_t kMaxVectorRows = 65536;

namespace vector_flag {
inline constexpr uint8_t kNesterov = 1u << 0;   // sgd only
inline constexpr uint8_t kTranspose = 1u << 1;  // to_bf16 only
}  // namespace vector_flag

static_assert(sizeof(CommandListHeader) == kBeatBytes, "header is one beat");
static_assert(sizeof(GemmDescriptor) == kBeatBytes, "descriptor is one beat");
static_assert(sizeof(VectorDescriptor) == kBeatBytes, "descriptor is one beat");
static_assert(offsetof(VectorDescriptor, n) == 4);
static_assert(offsetof(VectorDescriptor, alpha) == 16);
static_assert(offsetof(VectorDescriptor, x_addr) == 32);
static_assert(offsetof(GemmDescriptor, m) == 4);
static_assert(offsetof(GemmDescriptor, lda) == 16);
static_assert(offsetof(GemmDescriptor, a_addr) == 32);
static_assert(offsetof(GemmDescriptor, bias_addr) == 56);
static_assert(offsetof(CommandListHeader, count) == 8);

// The header of a list of `count` descriptors in this version.
constexpr CommandListHeader command_list_header(uint32_t count) {
  CommandListHeader header{};
  header.magic = kCommandListMagic;
  header.version_major = uint16_t(kVersionMajor);
  header.version_minor = uint16_t(kVersionMinor);
  header.count = count;
  return header;
}

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

// One encoded descriptor of either kind, as a list holds it.
using CommandRecord = std::array<uint8_t, kBeatBytes>;

template <class Descriptor>
inline CommandRecord record_of(const Descriptor& descriptor) {
  static_assert(sizeof(Descriptor) == kBeatBytes, "a descriptor is one beat");
  CommandRecord record;
  encode(descriptor, record.data());
  return record;
}

}  // namespace systole::spec
