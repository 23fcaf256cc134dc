// SPDX-License-Identifier: Apache-2.0
// The vector engine's operations over whole arrays: the elementwise opcodes
// through spec::vector_apply (the engine's arithmetic, in place under the
// processor's flush-to-zero), sums through spec::vector_sum, and to_bf16
// through the host's own rounding, transposing in tiles.
#include "fast_vector.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "systole/numerics.h"
#include "systole/vector_ops.h"
#include "systole_kernel.h"

namespace systole::sw_emu {
namespace {

// z (bf16, 2-byte aligned) = f32_to_bf16 of rows x n values `stride` apart,
// packed, or transposed to n x rows.
void to_bf16(const float* x, uint32_t n, uint32_t rows, uint32_t stride, bool transpose, uint8_t* z) {
  if (!transpose) {
    std::vector<numerics::bf16_t> row(n);
    for (uint32_t r = 0; r < rows; ++r) {
      numerics::f32_to_bf16_array(x + std::size_t(r) * stride, row.data(), n);
      std::memcpy(z + std::size_t(r) * n * 2, row.data(), std::size_t(n) * 2);
    }
    return;
  }
  // Tiles of kTile x kTile: the rounding runs along x's rows, the writes
  // along z's.
  constexpr uint32_t kTile = 32;
  numerics::bf16_t tile[kTile][kTile], column[kTile];
  for (uint32_t r0 = 0; r0 < rows; r0 += kTile) {
    const uint32_t tile_rows = std::min(kTile, rows - r0);
    for (uint32_t c0 = 0; c0 < n; c0 += kTile) {
      const uint32_t tile_cols = std::min(kTile, n - c0);
      for (uint32_t r = 0; r < tile_rows; ++r)
        numerics::f32_to_bf16_array(x + std::size_t(r0 + r) * stride + c0, tile[r], tile_cols);
      for (uint32_t c = 0; c < tile_cols; ++c) {
        for (uint32_t r = 0; r < tile_rows; ++r) column[r] = tile[r][c];
        std::memcpy(z + (std::size_t(c0 + c) * rows + r0) * 2, column, std::size_t(tile_rows) * 2);
      }
    }
  }
}

}  // namespace

void fast_vector(const spec::VectorDescriptor& d, const uint8_t* a_port, uint8_t* c_port,
                 spec::PerfCounters& counters) {
  const spec::Opcode op = spec::Opcode(d.opcode);
  const float* x = reinterpret_cast<const float*>(a_port + d.x_addr);
  auto at = [&](uint64_t address) { return reinterpret_cast<float*>(c_port + address); };
  switch (op) {
    case spec::Opcode::kSum:
      spec::vector_sum(
          d.rows, [&](std::size_t r) { return x + r * d.stride; }, 0, d.n, at(d.z_addr));
      break;
    case spec::Opcode::kToBf16:
      to_bf16(x, d.n, d.rows, d.stride, (d.flags & spec::vector_flag::kTranspose) != 0, c_port + d.z_addr);
      break;
    default: {
      const spec::VectorOperands operands = spec::vector_operands(op);
      auto operand = [&](int i, uint64_t address) { return operands.uses(i) ? at(address) : nullptr; };
      spec::vector_apply(op, spec::VectorScalars::of(d), d.n, x, operand(1, d.y_addr), operand(2, d.z_addr),
                         operand(3, d.w_addr));
      break;
    }
  }
  counters.busy_cycles += hls_kernel::vector_schedule_cycles(d);
  hls_kernel::add_vector_traffic(d, counters);
}

}  // namespace systole::sw_emu
