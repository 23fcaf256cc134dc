// SPDX-License-Identifier: Apache-2.0
// The sums over a batch that bias and normalisation gradients are
// (SumCall): fp32 in the array's K order, on the host or with the vector
// engine's sum opcode on the card (NUMERICS.md, "Products and
// reductions").
#include <algorithm>
#include <optional>
#include <vector>

#include "systole/matmul.h"
#include "systole/vector_ops.h"
#include "systole/vector_plan.h"
#include "unit_memory.h"

namespace systole {

void sum_rows(const float* x, uint32_t rows, uint32_t width, uint32_t tile, float* out) {
  if (tile == 0 || tile > rows) tile = std::max(rows, 1u);
  const uint32_t tiles = rows ? (rows + tile - 1) / tile : 0;
  if (tiles == 0) {
    std::fill_n(out, width, 0.0f);
    return;
  }
  std::vector<float> sums(std::size_t(tiles) * width);
  for (uint32_t t = 0; t < tiles; ++t) {
    const float* first = x + std::size_t(t) * tile * width;
    spec::vector_sum(
        std::min(tile, rows - t * tile), [&](std::size_t r) { return first + r * width; }, 0, width,
        sums.data() + std::size_t(t) * width);
  }
  spec::vector_sum(
      tiles, [&](std::size_t t) { return sums.data() + t * width; }, 0, width, out);
}

Status MatmulExecutor::sum(const SumCall& call) {
  if (call.x.card && !call.x.host)
    return Status(StatusCode::kUnavailable, "sum: this executor keeps no tensors on the card");
  if (!call.x.host || !call.out.host)
    return Status(StatusCode::kInvalidArgument, "sum: an operand is missing");
  sum_rows(call.x.host, call.rows, call.width, call.tile_rows(k_tile()), call.out.host);
  return ok_status();
}

Status DeviceMatmul::sum(const SumCall& call) {
  if (!call.x || !call.out) return Status(StatusCode::kInvalidArgument, "sum: an operand is missing");
  // Sums made on the host go to out.host, and to out.card too where no host copy
  // stands behind it (a tensor given instead of out, or beside it).
  const bool out_resident = call.out.card.same_values(resident_.gradients);
  auto host_sums = [&](const float* x) -> Status {
    const bool to_card = call.out.card && !out_resident;
    float* into = call.out.host;
    if (!into && to_card) {
      summed_out_.resize(call.width);
      into = summed_out_.data();
    }
    if (!into) return Status(StatusCode::kInvalidArgument, "sum: an operand is missing");
    if (to_card && call.out.card.count() < call.width)
      return Status(StatusCode::kInvalidArgument, "sum: " + std::to_string(call.width) +
                                                      " sums into a tensor of " +
                                                      std::to_string(call.out.card.count()));
    sum_rows(x, call.rows, call.width, call.tile_rows(k_tile()), into);
    return to_card ? call.out.card.part(0, call.width)->write(into) : ok_status();
  };
  if (!call.x.card) return host_sums(call.x.host);
  if (!supports(Feature::kCardTensors)) return UnitMemory::no_vector_engine("sum");
  const uint32_t rows = call.rows, width = call.width, tile = call.tile_rows(k_tile());
  const std::size_t count = std::size_t(rows) * width;
  const uint32_t tiles = (rows + tile - 1) / tile;
  if (rows == 0 || width == 0 || width > spec::kMaxVectorElements || tiles > spec::kMaxVectorRows)
    return Status(StatusCode::kInvalidArgument,
                  "sum: " + std::to_string(rows) + " rows of " + std::to_string(width) +
                      " values do not fit the vector engine's sum (up to " +
                      std::to_string(spec::kMaxVectorElements) + " values a row, " +
                      std::to_string(spec::kMaxVectorRows) + " tiles of " + std::to_string(tile) + " rows)");
  const DeviceTensor& tensor = call.x.card;
  if (count > tensor.count())
    return Status(StatusCode::kInvalidArgument, "sum: the values summed are " + std::to_string(count) +
                                                    " of a tensor of " + std::to_string(tensor.count()));
  if (!tensor.reads_in_order()) {
    // A view that reads transposed: its values come down and are summed
    // here, in the rows' order.
    const uint32_t block_rows = tensor.block_rows(), block_cols = tensor.block_cols();
    const std::size_t block = std::size_t(block_rows) * block_cols;
    if (count % block != 0)
      return Status(StatusCode::kInvalidArgument,
                    "sum: the values summed are not whole blocks of their view");
    if (!pending_.empty()) SYSTOLE_RETURN_IF_ERROR(run_vector({}));
    auto stored = tensor.part(0, count);
    if (!stored.ok()) return stored.status();
    std::vector<float> values(count);
    SYSTOLE_RETURN_IF_ERROR(stored->read(values.data()));
    summed_.resize(count);
    for (std::size_t b = 0; b < count / block; ++b)
      for (uint32_t r = 0; r < block_rows; ++r)
        for (uint32_t c = 0; c < block_cols; ++c)
          summed_[b * block + std::size_t(c) * block_rows + r] =
              values[b * block + std::size_t(r) * block_cols + c];
    return host_sums(summed_.data());
  }
  auto x = UnitMemory::address(tensor, count, "sum: the values summed");
  if (!x.ok()) return x.status();

  // Into out.card where it is given, else into sums_.
  uint64_t out;
  if (call.out.card) {
    auto address = memory_->result(call.out.card, width, "sum: the result");
    if (!address.ok()) return address.status();
    out = *address;
  } else {
    SYSTOLE_RETURN_IF_ERROR(memory_->ensure(sums_, width * sizeof(float)));
    out = sums_.buffer.address();
  }
  // Sums queued earlier may still write the tiles' buffer that a larger one
  // replaces: they run first.
  const std::size_t tile_bytes = std::size_t(tiles) * width * sizeof(float);
  if (!pending_.empty() && tile_sums_.buffer && tile_sums_.buffer.size() < tile_bytes)
    SYSTOLE_RETURN_IF_ERROR(run_vector({}));
  SYSTOLE_RETURN_IF_ERROR(memory_->ensure(tile_sums_, tile_bytes));
  const uint64_t sums = tile_sums_.buffer.address();
  std::vector<spec::CommandRecord> work;
  for (uint32_t t = 0; t < tiles; ++t)
    SYSTOLE_RETURN_IF_ERROR(append_vector_plan(sum_problem(std::min(tile, rows - t * tile), width, width,
                                                           *x + uint64_t(t) * tile * width * sizeof(float),
                                                           sums + uint64_t(t) * width * sizeof(float)),
                                               work));
  SYSTOLE_RETURN_IF_ERROR(append_vector_plan(sum_problem(tiles, width, width, sums, out), work));
  if (call.out.card && !out_resident) return run_vector(work);
  if (call.out.card) {
    // Nothing comes down: the sums run at the head of the next launch
    // (the step's, which reads the gradients).
    card_written_.add(call.out.card.offset(), call.out.card.offset() + width);
    pending_.insert(pending_.end(), work.begin(), work.end());
    return ok_status();
  }
  SYSTOLE_RETURN_IF_ERROR(run_vector(work));
  const std::size_t bytes = width * sizeof(float);
  SYSTOLE_RETURN_IF_ERROR(sums_.buffer.sync(Buffer::SyncDirection::kFromDevice, bytes, 0));
  return sums_.buffer.read(call.out.host, bytes);
}

}  // namespace systole
