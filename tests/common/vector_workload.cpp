// SPDX-License-Identifier: Apache-2.0
#include "common/vector_workload.h"

#include <algorithm>
#include <cstring>
#include <iterator>

#include "common/awkward_fp32.h"
#include "systole/gemm_plan.h"
#include "systole/numerics.h"
#include "systole/spec.h"
#include "systole/validate.h"

namespace systole::testing {

using spec::Opcode;

std::vector<uint8_t> encode_list(const std::vector<spec::VectorDescriptor>& descriptors) {
  std::vector<spec::CommandRecord> records;
  for (const auto& d : descriptors) records.push_back(spec::record_of(d));
  return encode_command_lists(records, uint32_t(records.size())).at(0);
}

spec::VectorDescriptor random_descriptor(Opcode op, std::mt19937_64& rng, uint64_t bytes, uint32_t max_n) {
  static const uint32_t kSizes[] = {1, 3, 15, 16, 17, 255, 256, 257, 511, 1000, 1031};
  spec::VectorDescriptor d{};
  d.opcode = uint8_t(op);
  d.n = kSizes[rng() % std::size(kSizes)];
  const bool sum = op == Opcode::kSum, to_bf16 = op == Opcode::kToBf16;
  if (spec::vector_reads_rows(op)) {
    d.rows = 1 + uint32_t(rng() % (to_bf16 ? 37 : 9));
    if (to_bf16) d.n = 1 + uint32_t(rng() % 300);  // rows x n fits a region as bf16 and as fp32
    d.n = std::min(d.n, max_n);
    d.stride = d.n + uint32_t(rng() % 5);
  }
  d.n = std::min(d.n, max_n);
  if (to_bf16 && rng() % 2) d.flags = spec::vector_flag::kTranspose;
  // Four regions, each starting at an address that is a multiple of 4 but
  // rarely of 64, so the transfers' first and last beats are partial.
  const uint64_t region = bytes / 4;
  uint64_t addr[4];
  // (to_bf16's bf16 output at a multiple of 2.)
  for (int i = 0; i < 4; ++i) addr[i] = i * region + (to_bf16 && i == 2 ? 2 : 4) * (rng() % 40);
  const spec::VectorOperands operands = spec::vector_operands(op);
  // In place: an output on the buffer of a read-only input (x).
  if (!sum && !to_bf16 && rng() % 4 == 0)
    for (int i = 1; i < 4; ++i)
      if (operands.written[i]) {
        addr[i] = addr[0];
        break;
      }
  auto pick = [&](int i) { return operands.uses(i) ? addr[i] : 0; };
  d.x_addr = pick(0), d.y_addr = pick(1), d.z_addr = pick(2), d.w_addr = pick(3);
  auto scalar = [&]() {
    switch (rng() % 6) {
      case 0:
        return numerics::f32_from_bits(awkward_bits(rng));
      case 1:
        return 0.0f;
      default:
        return float(std::uniform_real_distribution<double>(0.0, 1.0)(rng));
    }
  };
  const uint32_t scalars = spec::vector_scalar_count(op);
  if (scalars > 0) d.alpha = scalar(), d.beta = scalar();
  if (scalars > 2) d.gamma = scalar(), d.delta = float(1e-7);
  if (op == Opcode::kSgd && rng() % 2) d.flags = spec::vector_flag::kNesterov;
  return d;
}

std::vector<uint8_t> random_image(std::mt19937_64& rng, uint64_t bytes) {
  std::vector<uint8_t> image(bytes);
  for (uint64_t i = 0; i + 4 <= bytes; i += 4) {
    const uint32_t value = awkward_bits(rng);
    std::memcpy(image.data() + i, &value, 4);
  }
  return image;
}

}  // namespace systole::testing
