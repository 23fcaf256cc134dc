// SPDX-License-Identifier: Apache-2.0
#include "systole/convolution.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "systole/vector_ops.h"

namespace systole {
namespace {

using spec::kOperandsFlushInHardware;

// out[i] = add(out[i], term[i]) for i < values, under FlushToZero, as
// spec::vector_sum adds (canonical after each add where the hardware does
// not flush; the caller canonicalises once where it does). Compiled twice,
// and picked by the CPU at load time: with AVX2, 8 values wide.
__attribute__((target_clones("avx2", "default"))) void add_term(const float* __restrict term, uint32_t values,
                                                                float* __restrict out) {
  for (uint32_t i = 0; i < values; ++i) {
    const float sum = spec::vector_math::add(out[i], term[i]);
    out[i] = kOperandsFlushInHardware ? sum : numerics::f32_canonical(sum);
  }
}

// out = the sum of terms[0 .. count) as spec::vector_sum adds it, under
// FlushToZero (compiled twice, as add_term is).
__attribute__((target_clones("avx2", "default"))) void sum_terms(const float* const* terms, uint32_t count,
                                                                 uint32_t values, float* out) {
  spec::vector_sum_flushed(
      count, [&](std::size_t r) { return terms[r]; }, 0, values, out);
}

// Where the output positions that read input value (y, x) through `tap`
// are: the row of dcol, or none.
std::optional<std::size_t> reader(const ConvShape& s, uint32_t n, uint32_t y, uint32_t x, uint32_t tap) {
  const uint32_t ky = tap / s.kernel_width, kx = tap % s.kernel_width;
  const int64_t oy = int64_t(y) + s.top - ky, ox = int64_t(x) + s.left - kx;
  if (oy < 0 || ox < 0 || oy % s.stride_height != 0 || ox % s.stride_width != 0 ||
      oy / s.stride_height >= s.out_height || ox / s.stride_width >= s.out_width)
    return std::nullopt;
  return (std::size_t(n) * s.out_height + std::size_t(oy / s.stride_height)) * s.out_width +
         std::size_t(ox / s.stride_width);
}

}  // namespace

void col2im(const ConvShape& shape, uint32_t examples, const float* dcol, float* dx) {
  const ConvShape& s = shape;
  const spec::FlushToZero flush_to_zero;
  const uint32_t taps = s.taps(), patch = s.patch(), channels = s.channels;
  // In dcol's order: each value's terms come in descending tap order, as
  // the output positions that read it do, and dcol streams once.
  std::memset(dx, 0, examples * s.input_values() * sizeof(float));
  s.walk_patches(0, examples, [&](std::size_t row, int64_t source) {
    if (source >= 0) add_term(dcol + row, channels, dx + source);
  });
  if (kOperandsFlushInHardware)
    for (std::size_t i = 0; i < examples * s.input_values(); ++i) dx[i] = numerics::f32_canonical(dx[i]);
  // The +0 terms of the taps that miss a value change a sum only when it
  // is a zero (they make a -0 +0), so the values that a tap misses and
  // that sum to a zero are summed again with every term, in order.
  // A tap misses (y, x) when its row or its column misses.
  auto misses = [](uint32_t at, uint32_t pad, uint32_t kernel, uint32_t stride, uint32_t out) {
    for (uint32_t k = 0; k < kernel; ++k) {
      const int64_t o = int64_t(at) + pad - k;
      if (o < 0 || o % stride != 0 || o / stride >= out) return true;
    }
    return false;
  };
  std::vector<bool> row_missed(s.height), column_missed(s.width);
  for (uint32_t y = 0; y < s.height; ++y)
    row_missed[y] = misses(y, s.top, s.kernel_height, s.stride_height, s.out_height);
  for (uint32_t x = 0; x < s.width; ++x)
    column_missed[x] = misses(x, s.left, s.kernel_width, s.stride_width, s.out_width);
  const std::vector<float> zeros(channels, 0.0f);
  std::vector<const float*> terms(taps);
  for (uint32_t n = 0; n < examples; ++n)
    for (uint32_t y = 0; y < s.height; ++y)
      for (uint32_t x = 0; x < s.width; ++x) {
        float* out = dx + ((std::size_t(n) * s.height + y) * s.width + x) * channels;
        if (!(row_missed[y] || column_missed[x]) || std::find(out, out + channels, 0.0f) == out + channels)
          continue;
        for (uint32_t r = 0; r < taps; ++r) {
          const uint32_t tap = taps - 1 - r;
          const std::optional<std::size_t> read = reader(s, n, y, x, tap);
          terms[r] = read ? dcol + *read * patch + std::size_t(tap) * channels : zeros.data();
        }
        sum_terms(terms.data(), taps, channels, out);
      }
}

}  // namespace systole
