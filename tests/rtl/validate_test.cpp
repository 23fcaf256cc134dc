// SPDX-License-Identifier: Apache-2.0
// The RTL command validator under Verilator (label rtl) against
// hw/spec/systole/validate.h: random valid descriptors with up to three
// corruptions from boundary values (zero, the limit, limit + 1, odd and
// unaligned addresses, spans that straddle the end of memory, values near
// 2^64), random memory sizes; the same for vector descriptors (overlapping
// and in-place buffers too); and random headers. Same code for every case.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "Vsystole_validate.h"
#include "coverage.h"
#include "systole/descriptor.h"
#include "systole/validate.h"
#include "verilated.h"

namespace systole {
namespace {

// The kernel's validator: with the vector engine.
constexpr spec::ArrayShape kShape{8, 8, 1024, spec::feature::kVectorEngine};

template <class Record>
void load_beat(Vsystole_validate& model, const Record& record) {
  uint8_t bytes[64];
  spec::encode(record, bytes);
  for (int word = 0; word < 16; ++word) std::memcpy(&model.beat_i[word], bytes + 4 * word, 4);
}

// Values where the checks' comparisons turn: small and odd values, powers
// of two and one past them, 32-bit limits, the memory's end and just below
// it, and near 2^64.
std::vector<uint64_t> boundary_values(uint64_t mem_bytes) {
  return {0,
          1,
          2,
          3,
          255,
          256,
          257,
          64,
          65,
          65536,
          65537,
          0xFFFFFFFFull,
          mem_bytes,
          mem_bytes - 1,
          mem_bytes - 4,
          ~uint64_t(0) - 1};
}

// What the C++ says of a descriptor of either kind, by its opcode byte.
template <class Record>
spec::ErrorCode expected_error(const Record& record, uint64_t mem_bytes) {
  uint8_t bytes[64];
  spec::encode(record, bytes);
  return spec::validate_record(bytes, mem_bytes, kShape);
}

TEST(RtlValidate, DescriptorsGetTheSpecsErrorCode) {
  auto context = std::make_unique<VerilatedContext>();
  auto model = std::make_unique<Vsystole_validate>(context.get());
  sim::CoverageWriter coverage(context.get());  // after the model: ends first
  const uint32_t seed = 41;
  std::mt19937_64 rng(seed);
  auto pick = [&](uint64_t lo, uint64_t hi) { return lo + rng() % (hi - lo + 1); };
  uint32_t counts[16] = {};
  for (int i = 0; i < 2'000'000; ++i) {
    const uint64_t mem_bytes = rng() % 4 == 0 ? pick(0, 1 << 20) : uint64_t(1) << pick(20, 40);
    spec::GemmDescriptor d{};
    d.opcode = uint8_t(spec::Opcode::kGemm);
    d.flags = uint8_t(pick(0, spec::flag::kAll));
    d.m = uint32_t(pick(1, kShape.max_m()));
    d.n = uint32_t(pick(1, 300));
    d.k = uint32_t(pick(1, kShape.max_k()));
    d.lda = d.k + uint32_t(pick(0, 5));
    d.ldb = d.n + uint32_t(pick(0, 5));
    d.ldc = d.n + uint32_t(pick(0, 5));
    d.a_addr = pick(0, mem_bytes / 4) & ~uint64_t(1);
    d.b_addr = pick(0, mem_bytes / 4) & ~uint64_t(1);
    d.c_addr = pick(0, mem_bytes / 4) & ~uint64_t(3);
    d.bias_addr = pick(0, mem_bytes / 4) & ~uint64_t(3);
    for (int corruptions = int(pick(0, 3)); corruptions > 0; --corruptions) {
      const std::vector<uint64_t> boundary = boundary_values(mem_bytes);
      const uint64_t value = rng() % 2 ? boundary[rng() % boundary.size()] : rng();
      switch (rng() % 15) {
        case 0:
          d.opcode = uint8_t(value);
          break;
        case 1:
          d.flags = uint8_t(value);
          break;
        case 2:
          d.reserved0 = uint16_t(value);
          break;
        case 3:
          d.reserved1 = uint32_t(value);
          break;
        case 4:
          d.m = uint32_t(value);
          break;
        case 5:
          d.n = uint32_t(value);
          break;
        case 6:
          d.k = uint32_t(value);
          break;
        case 7:
          d.lda = uint32_t(value);
          break;
        case 8:
          d.ldb = uint32_t(value);
          break;
        case 9:
          d.ldc = uint32_t(value);
          break;
        case 10:
          d.a_addr = value;
          break;
        case 11:
          d.b_addr = value;
          break;
        case 12:
          d.c_addr = value;
          break;
        case 13:
          d.bias_addr = value;
          break;
        case 14:
          d.c_addr = mem_bytes - uint64_t(pick(0, 4096));
          break;
      }
    }
    load_beat(*model, d);
    model->mem_bytes_i = mem_bytes;
    model->eval();
    const auto expected = expected_error(d, mem_bytes);
    ++counts[uint32_t(expected)];
    ASSERT_EQ(model->descriptor_error_o, uint32_t(expected))
        << "seed " << seed << " case " << i << ": expected " << spec::error_code_name(expected);
  }
  // Every descriptor error code was reached.
  for (uint32_t code = 0; code <= uint32_t(spec::ErrorCode::kAddressOutOfRange); ++code) {
    if (code >= 1 && code <= 3) continue;  // header-only codes
    EXPECT_GT(counts[code], 100u) << spec::error_code_name(spec::ErrorCode(code));
  }
}

TEST(RtlValidate, VectorDescriptorsGetTheSpecsErrorCode) {
  auto context = std::make_unique<VerilatedContext>();
  auto model = std::make_unique<Vsystole_validate>(context.get());
  sim::CoverageWriter coverage(context.get());  // after the model: ends first
  const uint32_t seed = 47;
  std::printf("seed %u\n", seed);
  std::mt19937_64 rng(seed);
  auto pick = [&](uint64_t lo, uint64_t hi) { return lo + rng() % (hi - lo + 1); };
  uint32_t counts[16] = {};
  for (int i = 0; i < 1'000'000; ++i) {
    const uint64_t mem_bytes = rng() % 4 == 0 ? pick(0, 1 << 20) : uint64_t(1) << pick(20, 40);
    const spec::Opcode op = spec::Opcode(pick(uint8_t(spec::Opcode::kAxpby), uint8_t(spec::Opcode::kToBf16)));
    const spec::VectorOperands operands = spec::vector_operands(op);
    spec::VectorDescriptor d{};
    d.opcode = uint8_t(op);
    d.n = uint32_t(rng() % 2 ? pick(1, 300) : pick(1, spec::kMaxVectorElements));
    if (spec::vector_reads_rows(op)) {
      d.rows = uint32_t(pick(1, 40));
      d.stride = d.n + uint32_t(pick(0, 5));
    }
    if (rng() % 2) d.flags = spec::vector_allowed_flags(op);
    const uint32_t scalars = spec::vector_scalar_count(op);
    float* scalar[4] = {&d.alpha, &d.beta, &d.gamma, &d.delta};
    for (uint32_t k = 0; k < scalars; ++k) *scalar[k] = float(pick(0, 1000)) / 1000.0f;
    uint64_t* addr[4] = {&d.x_addr, &d.y_addr, &d.z_addr, &d.w_addr};
    for (int k = 0; k < 4; ++k)
      if (operands.uses(k)) *addr[k] = pick(0, mem_bytes / 4) & ~uint64_t(3);
    // An output on an input's buffer (in place, or overlapping it).
    if (rng() % 4 == 0)
      for (int k = 1; k < 4; ++k)
        if (operands.written[k]) {
          *addr[k] = d.x_addr + (rng() % 2 ? 0 : 4 * pick(0, 8));
          break;
        }
    for (int corruptions = int(pick(0, 3)); corruptions > 0; --corruptions) {
      // The element limit too.
      std::vector<uint64_t> boundary = boundary_values(mem_bytes);
      boundary.push_back(spec::kMaxVectorElements);
      boundary.push_back(uint64_t(spec::kMaxVectorElements) + 1);
      const uint64_t value = rng() % 2 ? boundary[rng() % boundary.size()] : rng();
      switch (rng() % 13) {
        case 0:
          d.opcode = uint8_t(pick(0, 12));
          break;
        case 1:
          d.flags = uint8_t(value);
          break;
        case 2:
          d.reserved0 = uint16_t(value);
          break;
        case 3:
          d.n = uint32_t(value);
          break;
        case 4:
          d.rows = uint32_t(value);
          break;
        case 5:
          d.stride = uint32_t(value);
          break;
        case 6: {  // a scalar's bits, -0 included
          const uint32_t bits = rng() % 2 ? 0x80000000u : uint32_t(value);
          std::memcpy(scalar[rng() % 4], &bits, 4);
          break;
        }
        case 7:
        case 8:
        case 9:
        case 10:
          *addr[rng() % 4] = value;
          break;
        case 11:  // two operands on one buffer
          *addr[rng() % 4] = *addr[rng() % 4];
          break;
        case 12:
          *addr[rng() % 4] = mem_bytes - uint64_t(pick(0, 4096));
          break;
      }
    }
    load_beat(*model, d);
    model->mem_bytes_i = mem_bytes;
    model->eval();
    const spec::ErrorCode expected = expected_error(d, mem_bytes);
    ++counts[uint32_t(expected)];
    ASSERT_EQ(model->descriptor_error_o, uint32_t(expected))
        << "seed " << seed << " case " << i << ": opcode " << int(d.opcode) << ", expected "
        << spec::error_code_name(expected);
  }
  // Every descriptor error code was reached.
  for (uint32_t code = 0; code <= uint32_t(spec::ErrorCode::kOverlappingBuffers); ++code) {
    if ((code >= 1 && code <= 3) || code == uint32_t(spec::ErrorCode::kAxiError))
      continue;  // not a descriptor's
    EXPECT_GT(counts[code], 100u) << spec::error_code_name(spec::ErrorCode(code));
  }
}

TEST(RtlValidate, HeadersGetTheSpecsErrorCode) {
  auto context = std::make_unique<VerilatedContext>();
  auto model = std::make_unique<Vsystole_validate>(context.get());
  sim::CoverageWriter coverage(context.get());  // after the model: ends first
  const uint32_t seed = 43;
  std::mt19937 rng(seed);
  for (int i = 0; i < 200'000; ++i) {
    spec::CommandListHeader h{};
    h.magic = rng() % 8 ? spec::kCommandListMagic : rng();
    h.version_major = uint16_t(rng() % 8 ? spec::kVersionMajor : rng() % 3);
    h.version_minor = uint16_t(rng());
    const uint32_t counts[] = {0, 1, 65536, 65537, 0xFFFFFFFF};
    h.count = rng() % 2 ? counts[rng() % 5] : rng() % 70000;
    if (rng() % 8 == 0) h.reserved[rng() % 13] = rng() | 1;
    load_beat(*model, h);
    model->eval();
    ASSERT_EQ(model->header_error_o, uint32_t(spec::validate_header(h, kShape)))
        << "seed " << seed << " case " << i;
  }
}

}  // namespace
}  // namespace systole
