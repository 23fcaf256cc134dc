// SPDX-License-Identifier: Apache-2.0
// Random command lists for differential tests.
#include "common/random_workload.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "systole/numerics.h"

namespace systole::testing {
namespace {

class Generator {
 public:
  Generator(uint32_t seed, const WorkloadOptions& options) : rng_(seed), options_(options) {}

  Workload build() {
    Workload w;
    const spec::ArrayShape& shape = options_.shape;
    for (uint32_t i = 0; i < options_.descriptors; ++i) {
      spec::GemmDescriptor d{};
      d.opcode = static_cast<uint8_t>(spec::Opcode::kGemm);
      d.m = awkward(shape.rows, std::min(options_.max_m, shape.max_m()), shape.max_m());
      d.n = options_.max_n ? pick(1, options_.max_n)
                           : awkward(shape.cols, 3 * shape.cols + 1, 4 * shape.cols + 3);
      d.k = awkward(shape.rows, 3 * shape.rows + 1, shape.max_k());
      d.flags = uint8_t(pick(0, spec::flag::kAll));
      const bool chain = !w.descriptors.empty() && pick(0, 3) == 0;
      if (chain) {
        // Accumulate into the previous descriptor's C: same M, N, ldc and
        // precision, new A and B (a K-chain as the host builds them).
        const spec::GemmDescriptor& p = w.descriptors.back();
        d.m = p.m;
        d.n = p.n;
        d.flags = uint8_t((d.flags & ~spec::flag::kOutputBf16) | (p.flags & spec::flag::kOutputBf16) |
                          spec::flag::kAccumulate);
        d.c_addr = p.c_addr;
      }
      d.lda = d.k + pick(0, 3);
      d.ldb = d.n + pick(0, 5);
      d.ldc = chain ? w.descriptors.back().ldc : d.n + pick(0, 2);
      const uint32_t c_bytes = spec::output_element_bytes(d.flags);
      d.a_addr = place(w.memory, uint64_t(d.m - 1) * d.lda + d.k, 2, [&] { return bf16(); });
      d.b_addr = place(w.memory, uint64_t(d.k - 1) * d.ldb + d.n, 2, [&] { return bf16(); });
      if (!chain)
        d.c_addr = place(w.memory, uint64_t(d.m - 1) * d.ldc + d.n, c_bytes,
                         [&] { return c_bytes == 2 ? bf16() : fp32(); });
      if (d.flags & spec::flag::kBias) d.bias_addr = place(w.memory, d.n, 4, [&] { return fp32(); });
      w.descriptors.push_back(d);
      w.description += "  [" + std::to_string(i) + "] M=" + std::to_string(d.m) +
                       " N=" + std::to_string(d.n) + " K=" + std::to_string(d.k) +
                       " lda=" + std::to_string(d.lda) + " ldb=" + std::to_string(d.ldb) +
                       " ldc=" + std::to_string(d.ldc) + " flags=" + std::to_string(d.flags) +
                       (chain ? " (chained)" : "") + "\n";
    }
    return w;
  }

 private:
  uint32_t pick(uint32_t lo, uint32_t hi) { return std::uniform_int_distribution<uint32_t>(lo, hi)(rng_); }

  // A dimension near a multiple of `tile` (1, tile-1, tile, tile+1, 2*tile+1)
  // or uniform up to `usual`, and rarely the device limit itself.
  uint32_t awkward(uint32_t tile, uint32_t usual, uint32_t limit) {
    switch (pick(0, 9)) {
      case 0:
        return 1;
      case 1:
        return std::max(1u, tile - 1);
      case 2:
        return tile;
      case 3:
        return std::min(limit, tile + 1);
      case 4:
        return std::min(limit, 2 * tile + 1);
      case 5:
        return pick(0, 15) == 0 ? limit : pick(1, usual);
      default:
        return pick(1, std::min(usual, limit));
    }
  }

  // Appends `count` elements of `element_bytes` at a random element-aligned
  // (not beat-aligned) offset; returns the offset of the first element.
  template <class Value>
  uint64_t place(std::vector<uint8_t>& memory, uint64_t count, uint32_t element_bytes, Value value) {
    const uint64_t gap = uint64_t(pick(0, 40)) * element_bytes;
    uint64_t offset = (memory.size() + gap + element_bytes - 1) / element_bytes * element_bytes;
    memory.resize(offset + count * element_bytes);
    for (uint64_t i = 0; i < count; ++i) {
      const uint32_t bits = value();
      std::memcpy(memory.data() + offset + i * element_bytes, &bits, element_bytes);
    }
    // Guard bytes after each operand catch writes past the end of a row.
    const std::size_t end = memory.size();
    memory.resize(end + 7);
    for (std::size_t i = end; i < memory.size(); ++i) memory[i] = uint8_t(pick(0, 255));
    return offset;
  }

  uint32_t bf16() {
    switch (options_.values) {
      case Values::kTypical: {
        if (pick(0, 15) == 0) return pick(0, 1) ? 0x8000 : 0;
        std::normal_distribution<float> normal(0.0f, 1.0f);
        return numerics::f32_to_bf16(normal(rng_));
      }
      case Values::kCancelling: {
        static constexpr uint16_t kValues[] = {0x0000, 0x8000, 0x3F80, 0xBF80, 0x4000,
                                               0xC000, 0x3F00, 0xBF00, 0x4040, 0xC040};
        return kValues[pick(0, 9)];
      }
      case Values::kExtreme: {
        const uint32_t sign = pick(0, 1) << 15;
        switch (pick(0, 11)) {
          case 0:
            return sign | pick(0, 0x7F);  // zero, subnormal
          case 1:
            return pick(0, 7) ? (sign | 0x7F80) : 0x7FC1;  // Inf, NaN
          case 2:
            return sign | pick(0xF0, 0xFE) << 7 | pick(0, 0x7F);  // huge
          case 3:
            return sign | pick(0x01, 0x10) << 7 | pick(0, 0x7F);  // tiny
          default:
            return sign | pick(0x60, 0x9F) << 7 | pick(0, 0x7F);
        }
      }
      case Values::kNearZero: {
        // 2^-64, 2^-63, 1.25 * 2^-63, 1.5 * 2^-63, 2^-62 and zeros: a product
        // of two is 2^-128 .. 2^-124 (below 2^-126 it flushes to a zero of
        // its sign), and a sum of two products of opposite signs is often
        // below 2^-126, so it flushes to -0 when negative.
        static constexpr uint16_t kMagnitudes[] = {0x0000, 0x1F80, 0x2000, 0x2020, 0x2040, 0x2080};
        return (pick(0, 1) << 15) | kMagnitudes[pick(0, 5)];
      }
    }
    return 0;
  }

  uint32_t fp32() {
    if (options_.values == Values::kExtreme) {
      switch (pick(0, 7)) {
        case 0:
          return pick(0, 1) << 31 | pick(0, 0x7FFFFF);  // subnormal
        case 1:
          return 0xFFC12345;  // NaN
        case 2:
          return pick(0, 1) << 31 | 0x7F800000;  // Inf
        default:
          break;
      }
    }
    if (options_.values == Values::kNearZero && pick(0, 1)) return pick(0, 1) << 31;  // a signed zero
    return numerics::f32_bits(numerics::bf16_to_f32(uint16_t(bf16()))) ^ pick(0, 0xFFFF);
  }

  std::mt19937 rng_;
  WorkloadOptions options_;
};

}  // namespace

const char* values_name(Values values) {
  switch (values) {
    case Values::kTypical:
      return "typical";
    case Values::kCancelling:
      return "cancelling";
    case Values::kExtreme:
      return "extreme";
    case Values::kNearZero:
      return "near_zero";
  }
  return "?";
}

std::vector<spec::GemmDescriptor> Workload::rebased(uint64_t base) const {
  std::vector<spec::GemmDescriptor> out = descriptors;
  for (spec::GemmDescriptor& d : out) {
    d.a_addr += base;
    d.b_addr += base;
    d.c_addr += base;
    if (d.flags & spec::flag::kBias) d.bias_addr += base;
  }
  return out;
}

Workload make_workload(uint32_t seed, const WorkloadOptions& options) {
  return Generator(seed, options).build();
}

}  // namespace systole::testing
