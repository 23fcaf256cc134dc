// SPDX-License-Identifier: Apache-2.0
// A convolution's input gradient (label emu): summed on the card
// (DeviceMatmul::conv_input_gradient_on_card), it has the bits of the
// product dcol = dy W brought to the host and col2im there, for awkward
// shapes (padding on one side, kernels wider than tall, channels and
// filters past the array's 16), with dy on the host, in a card tensor and
// in a Flatten's view of one, for chunks of several sizes in turn; and
// fewer bytes cross the link than dcol's. The host's col2im has the bits
// of its definition.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "card_unit.h"
#include "systole/convolution.h"
#include "systole/matmul.h"
#include "systole/numerics.h"
#include "systole/vector_ops.h"

namespace systole {
namespace {

using namespace testing::card;

// A convolution with strides 1, padded as Keras pads `same` (the odd row
// or column below and right), or `valid`.
ConvShape conv(uint32_t height, uint32_t width, uint32_t channels, uint32_t filters, uint32_t kernel_height,
               uint32_t kernel_width, bool same) {
  ConvShape s;
  s.height = height;
  s.width = width;
  s.channels = channels;
  s.filters = filters;
  s.kernel_height = kernel_height;
  s.kernel_width = kernel_width;
  s.out_height = same ? height : height - kernel_height + 1;
  s.out_width = same ? width : width - kernel_width + 1;
  s.top = same ? (kernel_height - 1) / 2 : 0;
  s.left = same ? (kernel_width - 1) / 2 : 0;
  return s;
}

std::string text(const ConvShape& s) {
  return std::to_string(s.height) + "x" + std::to_string(s.width) + "x" + std::to_string(s.channels) + ", " +
         std::to_string(s.filters) + " filters of " + std::to_string(s.kernel_height) + "x" +
         std::to_string(s.kernel_width) + (s.out_height == s.height ? " same" : " valid");
}

enum class Dy { kHost, kCardTensor, kCardView };
const char* name(Dy dy) {
  return dy == Dy::kHost ? "host" : dy == Dy::kCardTensor ? "card tensor" : "card view";
}

TEST(ConvInputGradient, SummedOnTheCardTheBitsOfCol2imOnTheHost) {
  const uint32_t seed = 23;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const std::vector<ConvShape> shapes = {conv(7, 5, 3, 6, 3, 3, true), conv(6, 9, 2, 5, 2, 4, true),
                                         conv(8, 6, 4, 3, 3, 2, false), conv(5, 4, 17, 33, 3, 3, true),
                                         conv(4, 3, 2, 3, 1, 1, false)};
  // Every shape's weights, one after another, kept on the card.
  std::vector<std::size_t> weight_at;
  std::size_t weights = 0;
  for (const ConvShape& s : shapes) {
    weight_at.push_back(weights);
    weights += std::size_t(s.filters) * s.patch();
  }
  const std::vector<float> values = normal_values(rng, weights);
  const std::vector<float> gradients(values.size(), 0.0f);
  ResidentUnit unit = resident_unit(values, gradients);
  DeviceMatmul& matmul = *unit.matmul;
  matmul.keep_resident(unit.resident);

  // The padded copies are zeroed once per shape and reused: chunks grow,
  // shrink and grow again, with the shapes in turn.
  for (const uint32_t examples : {2u, 3u, 1u, 3u})
    for (std::size_t i = 0; i < shapes.size(); ++i)
      for (const Dy mode : {Dy::kHost, Dy::kCardTensor, Dy::kCardView}) {
        const ConvShape& s = shapes[i];
        SCOPED_TRACE(text(s) + ", " + std::to_string(examples) + " examples, dy on the " + name(mode));
        const float* w = values.data() + weight_at[i];
        const DeviceTensor w_card = unit.values(weight_at[i], std::size_t(s.filters) * s.patch());
        const std::size_t positions = examples * s.positions(), dy_count = positions * s.filters;
        // dy made by a product, so that the card can hold the same values:
        // [positions x filters], or for the view each image's filters x
        // positions block.
        const uint32_t depth = 7;
        const std::vector<float> x = normal_values(rng, dy_count / s.filters * depth),
                                 y = normal_values(rng, std::size_t(depth) * s.filters);
        const std::vector<float> xt = normal_values(rng, dy_count / s.positions() * depth),
                                 yt = normal_values(rng, std::size_t(depth) * s.positions());
        MatmulCall make_dy =
            mode == Dy::kCardView
                ? product(uint32_t(examples * s.filters), uint32_t(s.positions()), depth, xt.data(),
                          yt.data(), nullptr)
                : product(uint32_t(positions), s.filters, depth, x.data(), y.data(), nullptr);
        std::vector<float> made(dy_count), dy(dy_count);
        make_dy.c = made.data();
        ASSERT_TRUE(matmul.run(make_dy).ok());
        for (uint32_t n = 0; n < examples; ++n)  // the view's reading of a block
          for (std::size_t p = 0; p < s.positions(); ++p)
            for (uint32_t f = 0; f < s.filters; ++f) {
              const std::size_t image = n * s.positions() * s.filters;
              dy[image + p * s.filters + f] = mode == Dy::kCardView ? made[image + f * s.positions() + p]
                                                                    : made[image + p * s.filters + f];
            }

        // The host's way: dcol down, col2im.
        const uint64_t before = unit.device.card_model()->projection().link_bytes;
        std::vector<float> dcol(positions * s.patch()), expected(examples * s.input_values());
        MatmulCall dcol_product =
            product(uint32_t(positions), s.patch(), s.filters, dy.data(), w, dcol.data());
        dcol_product.b.card = w_card;
        ASSERT_TRUE(matmul.run(dcol_product).ok());
        col2im(s, examples, dcol.data(), expected.data());
        const uint64_t host_bytes = unit.device.card_model()->projection().link_bytes - before;

        // The card's, from dy where the mode puts it.
        const float* host_dy = dy.data();
        DeviceTensor card_dy;
        if (mode != Dy::kHost) {
          card_dy = matmul.allocate(dy_count).value();
          make_dy.c = nullptr;
          make_dy.c.card = card_dy;
          ASSERT_TRUE(matmul.run(make_dy).ok());
          host_dy = nullptr;
        }
        if (mode == Dy::kCardView) {
          auto viewed = card_dy.blocks_transposed(s.filters, uint32_t(s.positions()));
          ASSERT_TRUE(viewed.ok()) << viewed.status().to_string();
          card_dy = std::move(viewed).value();
        }
        const uint64_t between = unit.device.card_model()->projection().link_bytes;
        std::vector<float> dx(expected.size(), -1234.5f);
        const Status ran = matmul.conv_input_gradient_on_card(s, examples, Operand(host_dy, card_dy),
                                                              Operand(w, w_card), dx.data());
        ASSERT_TRUE(ran.ok()) << ran.to_string();
        const uint64_t card_bytes = unit.device.card_model()->projection().link_bytes - between;
        std::size_t first = 0;
        while (first < dx.size() && std::memcmp(&dx[first], &expected[first], 4) == 0) ++first;
        EXPECT_EQ(first, dx.size()) << "value " << first << ": " << (first < dx.size() ? dx[first] : 0.0f)
                                    << " against " << (first < dx.size() ? expected[first] : 0.0f);
        // dcol (taps times dx's values) stays on the card; with dy on the
        // host its bf16 copy goes up, as the host's product's does.
        if (s.taps() > 1) {
          EXPECT_LT(card_bytes, host_bytes) << card_bytes << " bytes against the host's " << host_bytes;
        }
      }
}

// col2im by its definition: each input value summed on its own, from +0,
// one term per tap in descending order, +0 for a tap that misses it.
std::vector<float> col2im_by_definition(const ConvShape& s, uint32_t examples,
                                        const std::vector<float>& dcol) {
  std::vector<float> dx(examples * s.input_values());
  const std::vector<float> zeros(s.channels, 0.0f);
  std::vector<const float*> terms(s.taps());
  for (uint32_t n = 0; n < examples; ++n)
    for (uint32_t y = 0; y < s.height; ++y)
      for (uint32_t x = 0; x < s.width; ++x) {
        for (uint32_t r = 0; r < s.taps(); ++r) {
          const uint32_t tap = s.taps() - 1 - r, ky = tap / s.kernel_width, kx = tap % s.kernel_width;
          const int64_t oy = int64_t(y) + s.top - ky, ox = int64_t(x) + s.left - kx;
          const bool read = oy >= 0 && ox >= 0 && oy % s.stride_height == 0 && ox % s.stride_width == 0 &&
                            oy / s.stride_height < s.out_height && ox / s.stride_width < s.out_width;
          const std::size_t row =
              (std::size_t(n) * s.out_height + std::size_t(oy / s.stride_height)) * s.out_width +
              std::size_t(ox / s.stride_width);
          terms[r] = read ? &dcol[row * s.patch() + std::size_t(tap) * s.channels] : zeros.data();
        }
        spec::vector_sum(
            s.taps(), [&](std::size_t r) { return terms[r]; }, 0, s.channels,
            &dx[((std::size_t(n) * s.height + y) * s.width + x) * s.channels]);
      }
  return dx;
}

// The host's col2im (which streams dcol once and sums again only the
// values whose sign of zero the missing taps' +0 terms decide) against
// the definition, bit for bit, over values chosen to cancel: zeros of both
// signs, sums that flush to a zero of either sign, subnormals, infinities
// and NaNs; strides and padding on one side.
TEST(ConvInputGradient, Col2imHasTheBitsOfItsDefinition) {
  const uint32_t seed = 29;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  // Terms that cancel to zeros of both signs and to tiny sums that flush,
  // and now and then one that is not finite, a subnormal or large.
  const float tiny = 0x1p-126f;
  const float cancelling[] = {0.0f,         -0.0f,         1.5f * tiny, -1.5f * tiny,
                              1.25f * tiny, -1.25f * tiny, 2 * tiny,    -2 * tiny};
  const float rare[] = {INFINITY,  -INFINITY,  NAN, numerics::f32_from_bits(0xFFC12345u),
                        0x1p-130f, -0x1p-130f, 1.0f};
  std::vector<ConvShape> shapes = {conv(6, 5, 3, 4, 3, 3, true), conv(7, 6, 2, 3, 2, 3, true),
                                   conv(6, 6, 2, 2, 3, 2, false)};
  ConvShape strided = conv(7, 6, 3, 2, 3, 3, true);
  strided.stride_height = 2;
  strided.stride_width = 3;
  strided.out_height = 4;
  strided.out_width = 2;
  shapes.push_back(strided);
  for (const ConvShape& s : shapes) {
    SCOPED_TRACE(text(s) + ", strides " + std::to_string(s.stride_height) + "x" +
                 std::to_string(s.stride_width));
    const uint32_t examples = 3;
    std::vector<float> dcol(examples * s.positions() * s.patch());
    for (float& v : dcol)
      v = rng() % 30 == 0 ? rare[rng() % std::size(rare)] : cancelling[rng() % std::size(cancelling)];
    std::vector<float> dx(examples * s.input_values(), -1234.5f);
    col2im(s, examples, dcol.data(), dx.data());
    const std::vector<float> expected = col2im_by_definition(s, examples, dcol);
    std::size_t first = 0, zeros = 0, negative_zeros = 0;
    while (first < dx.size() && std::memcmp(&dx[first], &expected[first], 4) == 0) ++first;
    EXPECT_EQ(first, dx.size()) << "value " << first << ": " << (first < dx.size() ? dx[first] : 0.0f)
                                << " against " << (first < dx.size() ? expected[first] : 0.0f);
    for (float v : expected) {
      zeros += v == 0.0f;
      negative_zeros += v == 0.0f && std::signbit(v);
    }
    // The values exercise what they are meant to.
    EXPECT_GT(negative_zeros, 0u);
    EXPECT_GT(zeros, negative_zeros);
  }
}

// Where it cannot run (strides, a unit without the vector engine) it says
// so, and a gradient the card does not hold is an error that names it.
TEST(ConvInputGradient, RefusesWhatItCannotSum) {
  const std::vector<float> values(6 * 18, 0.5f);
  std::unique_ptr<DeviceMatmul> unit = sw_emu_unit();
  DeviceMatmul& matmul = *unit;
  ConvShape s = conv(5, 5, 2, 6, 3, 3, true);
  std::vector<float> dy(s.positions() * s.filters, 1.0f), dx(s.input_values());
  Status refused = sw_emu_unit(false)->conv_input_gradient_on_card(s, 1, dy.data(), values.data(), dx.data());
  EXPECT_EQ(refused.code(), StatusCode::kUnavailable);
  EXPECT_NE(refused.message().find("vector engine"), std::string::npos) << refused.message();
  ConvShape strided = s;
  strided.stride_height = 2;
  strided.out_height = 3;
  refused = matmul.conv_input_gradient_on_card(strided, 1, dy.data(), values.data(), dx.data());
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("strides 2x1"), std::string::npos) << refused.message();
  DeviceTensor short_dy = matmul.allocate(dy.size() - 1).value();
  refused = matmul.conv_input_gradient_on_card(s, 1, short_dy, values.data(), dx.data());
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(
      refused.message().find("dy reads " + std::to_string(dy.size()) + " values of a tensor the card holds " +
                             std::to_string(dy.size() - 1) + " of"),
      std::string::npos)
      << refused.message();
}

}  // namespace
}  // namespace systole
