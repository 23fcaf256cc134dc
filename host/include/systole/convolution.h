// SPDX-License-Identifier: Apache-2.0
// The shape of a 2-D convolution over NHWC images, and its col2im: how the
// input gradient is summed from the rows of dcol = dy W. The host's col2im
// and the card's (MatmulExecutor::conv_input_gradient_on_card) add the
// same terms in the same order, so they give the same bits.
#pragma once

#include <cstddef>
#include <cstdint>

namespace systole {

struct ConvShape {
  uint32_t height = 0, width = 0, channels = 0;  // the input
  uint32_t filters = 0;
  uint32_t kernel_height = 1, kernel_width = 1;
  uint32_t stride_height = 1, stride_width = 1;
  uint32_t top = 0, left = 0;  // zero rows above the input, columns left of it
  uint32_t out_height = 0, out_width = 0;

  // A row of the patch matrix: (ky, kx, channel).
  uint32_t patch() const { return kernel_height * kernel_width * channels; }
  uint32_t taps() const { return kernel_height * kernel_width; }
  std::size_t input_values() const { return std::size_t(height) * width * channels; }
  std::size_t positions() const { return std::size_t(out_height) * out_width; }

  // Calls visit(row, source) for each of the `channels`-long pieces of the
  // patch matrix's rows for examples [first, first + count), in order: row
  // is its offset in those rows, source the offset of the input value it
  // reads (counting from example 0), or -1 in the padding.
  template <class Visit>
  void walk_patches(uint32_t first, uint32_t count, Visit visit) const {
    std::size_t row = 0;
    for (uint32_t n = first; n < first + count; ++n)
      for (uint32_t oy = 0; oy < out_height; ++oy)
        for (uint32_t ox = 0; ox < out_width; ++ox)
          for (uint32_t ky = 0; ky < kernel_height; ++ky)
            for (uint32_t kx = 0; kx < kernel_width; ++kx, row += channels) {
              const int64_t y = int64_t(oy) * stride_height + ky - top,
                            x = int64_t(ox) * stride_width + kx - left;
              const bool inside = y >= 0 && x >= 0 && y < height && x < width;
              visit(row, inside ? ((int64_t(n) * height + y) * width + x) * channels : int64_t(-1));
            }
  }
};

// dx = col2im(dcol) for `examples` images: dcol is their patch matrix's
// gradient (examples * out_height * out_width rows of patch() values), dx
// their input gradient (written, not added to). Each input value is the
// sum, from +0, of one term per kernel tap in descending (ky, kx) order:
// the dcol value the tap read it into, or +0 where the tap read padding or
// no output position read it through the tap. The sums are the vector
// engine's (spec::vector_sum: subnormals flush, NaNs are canonical).
void col2im(const ConvShape& shape, uint32_t examples, const float* dcol, float* dx);

}  // namespace systole
