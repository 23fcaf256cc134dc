// SPDX-License-Identifier: Apache-2.0
// A stride-1 convolution's input gradient summed on the card
// (DeviceMatmul::conv_input_gradient_on_card): dy in a zero-padded frame,
// one product per kernel tap over the frame shifted by the tap's offset,
// one engine sum in col2im's order; only dx comes down.
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>

#include "systole/matmul.h"
#include "systole/trace.h"
#include "systole/vector_plan.h"
#include "unit_memory.h"

namespace systole {

Status DeviceMatmul::conv_input_gradient_on_card(const ConvShape& shape, uint32_t examples, const Operand& dy,
                                                 const Operand& w, float* dx) {
  const std::string what = "conv input gradient on card";
  const ConvShape& s = shape;
  if (!supports(Feature::kConvInputGradient)) return UnitMemory::no_vector_engine(what);
  if (!dy || !w || !dx) return Status(StatusCode::kInvalidArgument, what + ": an operand is missing");
  // With strides 1 the output is the padded input less the kernel, plus one.
  const uint32_t padded_height = s.out_height + s.kernel_height - 1;
  const uint32_t padded_width = s.out_width + s.kernel_width - 1;
  if (s.stride_height != 1 || s.stride_width != 1 || s.top + s.height > padded_height ||
      s.left + s.width > padded_width)
    return Status(StatusCode::kInvalidArgument,
                  what + ": not the shape of a convolution with strides 1 (strides " +
                      std::to_string(s.stride_height) + "x" + std::to_string(s.stride_width) + ", input " +
                      std::to_string(s.height) + "x" + std::to_string(s.width) + ", output " +
                      std::to_string(s.out_height) + "x" + std::to_string(s.out_width) + ")");
  if (examples == 0) return ok_status();
  const uint32_t taps = s.taps(), channels = s.channels, filters = s.filters;
  // dy goes into the padded copy as the image it convolves would: output
  // position (oy, ox) at pixel (oy, ox) of its image's padded frame,
  // zeros elsewhere, behind `lead` zero pixels. Tap (ky, kx)'s product
  // reads the copy ky * padded_width + kx pixels before pixel p, so its
  // row p is the tap's term for pixel p: the output position that read p
  // through the tap, or a zero row where none did (one past an edge of
  // the image reads the padding columns or rows, never another value).
  const uint64_t lead = uint64_t(s.kernel_height - 1) * padded_width + (s.kernel_width - 1);
  const uint64_t frame = uint64_t(padded_height) * padded_width, pixels = examples * frame;
  const uint64_t values = pixels * channels;  // of one tap's product
  if (pixels > UINT32_MAX || values > UINT32_MAX)
    return Status(StatusCode::kUnavailable,
                  what + ": " + std::to_string(values) + " values a tap is more than a descriptor spans");

  // The work's buffers first: without room for them, nothing has changed.
  auto padded = std::find_if(padded_.begin(), padded_.end(), [&](const PaddedGradient& p) {
    return p.padded_height == padded_height && p.padded_width == padded_width &&
           p.out_height == s.out_height && p.out_width == s.out_width && p.filters == filters;
  });
  if (padded == padded_.end()) {
    PaddedGradient made{padded_height, padded_width, s.out_height, s.out_width, filters, 0, {}};
    made.slot.bank = memory_->bank(Port::kA);
    padded_.push_back(std::move(made));
    padded = padded_.end() - 1;
  }
  const std::size_t padded_bytes = (lead + pixels) * filters * sizeof(uint16_t);
  if (padded->examples < examples) {
    // Zeroed once: later calls write the output positions only.
    SYSTOLE_RETURN_IF_ERROR(memory_->ensure(padded->slot, padded_bytes));
    std::memset(padded->slot.buffer.map(), 0, padded_bytes);
    SYSTOLE_RETURN_IF_ERROR(padded->slot.buffer.sync(Buffer::SyncDirection::kToDevice, padded_bytes, 0));
    padded->examples = examples;
  }
  tap_products_.bank = tap_sum_.bank = memory_->bank(Port::kC);
  SYSTOLE_RETURN_IF_ERROR(memory_->ensure(tap_products_, taps * values * sizeof(float)));
  SYSTOLE_RETURN_IF_ERROR(memory_->ensure(tap_sum_, values * sizeof(float)));
  ensure_call_slots(taps);

  using Clock = Trace::Clock;
  const Clock::time_point begun = Clock::now();
  double launch_seconds = 0;
  const uint32_t track = Trace::unit_track(unit_);
  std::optional<TraceScope> upload(std::in_place, "upload", "device", track);
  const uint64_t padded_address = padded->slot.buffer.address();
  // Byte address of output position (n, oy) row's first value in the copy.
  auto padded_row = [&](uint32_t n, uint32_t oy) {
    return (lead + n * frame + uint64_t(oy) * padded_width) * filters * sizeof(uint16_t);
  };
  const uint32_t row_values = s.out_width * filters;
  std::vector<spec::CommandRecord> records;
  if (const DeviceTensor& dy_card = dy.card) {
    // A card tensor of examples x positions x filters, or a Flatten's view
    // of one stored filters x positions per image (read transposed).
    const std::size_t count = examples * s.positions() * filters;
    if (count > dy_card.count())
      return Status(StatusCode::kInvalidArgument, what + ": dy reads " + std::to_string(count) +
                                                      " values of a tensor the card holds " +
                                                      std::to_string(dy_card.count()) + " of");
    const bool transposed = !dy_card.reads_in_order();
    if (transposed && (dy_card.block_rows() != filters || dy_card.block_cols() != s.positions() ||
                       dy_card.offset() % (s.positions() * filters) != 0))
      return Status(StatusCode::kUnavailable, what + ": dy is a view whose blocks are not its images");
    const uint64_t base = dy_card.address();
    for (uint32_t n = 0; n < examples; ++n)
      for (uint32_t oy = 0; oy < s.out_height; ++oy) {
        const uint64_t z = padded_address + padded_row(n, oy);
        // Row oy of image n: transposed, out_width values of each filter's
        // row.
        const VectorProblem copy =
            transposed
                ? to_bf16_problem(
                      filters, s.out_width, s.positions(), true,
                      base + (n * s.positions() * filters + uint64_t(oy) * s.out_width) * sizeof(float), z)
                : to_bf16_problem(1, row_values, row_values, false,
                                  base + (uint64_t(n) * s.out_height + oy) * row_values * sizeof(float), z);
        SYSTOLE_RETURN_IF_ERROR(append_vector_plan(copy, records));
      }
  } else {
    uint16_t* view = padded->slot.buffer.map<uint16_t>();
    for (uint32_t n = 0; n < examples; ++n)
      for (uint32_t oy = 0; oy < s.out_height; ++oy)
        round_to_bf16(dy.host + (uint64_t(n) * s.out_height + oy) * row_values, row_values,
                      view + padded_row(n, oy) / sizeof(uint16_t));
    SYSTOLE_RETURN_IF_ERROR(padded->slot.buffer.sync(Buffer::SyncDirection::kToDevice,
                                                     pixels * filters * sizeof(uint16_t), padded_row(0, 0)));
  }
  // The vector work queued before this, then the copies and products.
  records.insert(records.begin(), pending_.begin(), pending_.end());
  pending_.clear();
  std::vector<spec::CommandRecord> products;
  const uint64_t tap_products = tap_products_.buffer.address();
  for (uint32_t r = 0; r < taps; ++r) {
    const uint32_t tap = taps - 1 - r;  // col2im's order: (ky, kx) descending
    const uint64_t back = uint64_t(tap / s.kernel_width) * padded_width + tap % s.kernel_width;
    // The tap's weights, filters x channels, patch() apart in W's rows.
    const std::size_t first = std::size_t(tap) * channels;
    auto tap_w = w.part(first, std::size_t(filters - 1) * s.patch() + channels);
    if (!tap_w.ok()) return tap_w.status();
    auto b = operand(*tap_w, filters, channels, false, s.patch(), Port::kB, b_[r], records);
    if (!b.ok()) return b.status();
    GemmProblem problem;
    problem.m = uint32_t(pixels);
    problem.n = channels;
    problem.k = filters;
    problem.a = {padded_address + (lead - back) * filters * sizeof(uint16_t), filters};
    problem.b = {*b, channels};
    problem.c = {tap_products + r * values * sizeof(float), channels};
    auto planned = plan_gemm(device_.info(), problem);
    if (!planned.ok()) return planned.status();
    for (const spec::GemmDescriptor& d : *planned) products.push_back(spec::record_of(d));
  }
  records.insert(records.end(), products.begin(), products.end());
  SYSTOLE_RETURN_IF_ERROR(append_vector_plan(
      sum_problem(taps, values, values, tap_products, tap_sum_.buffer.address()), records));
  SYSTOLE_RETURN_IF_ERROR(launch(records, upload, launch_seconds));

  // Down come the rows that hold the input's pixels.
  TraceScope download("download", "device", track);
  const uint64_t from = uint64_t(s.top) * padded_width * channels;
  const uint64_t to = (uint64_t(examples - 1) * frame + uint64_t(s.top + s.height) * padded_width) * channels;
  SYSTOLE_RETURN_IF_ERROR(tap_sum_.buffer.sync(Buffer::SyncDirection::kFromDevice,
                                               (to - from) * sizeof(float), from * sizeof(float)));
  const float* summed = tap_sum_.buffer.map<float>();
  for (uint32_t n = 0; n < examples; ++n)
    for (uint32_t y = 0; y < s.height; ++y)
      std::memcpy(dx + (uint64_t(n) * s.height + y) * s.width * channels,
                  summed + ((n * frame + uint64_t(s.top + y) * padded_width) + s.left) * channels,
                  std::size_t(s.width) * channels * sizeof(float));
  times_.launch_seconds += launch_seconds;
  times_.staging_seconds += std::chrono::duration<double>(Clock::now() - begun).count() - launch_seconds;
  return ok_status();
}

}  // namespace systole
