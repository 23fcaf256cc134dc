// SPDX-License-Identifier: Apache-2.0
// Flatten: height x width x channels to one vector in channel-major order
// (C, H, W), torch.nn.Flatten's order on NCHW tensors, so that the weights
// of a Dense layer after it mean the same in PyTorch. (Keras flattens in
// (H, W, C) order; the model is the same up to a permutation of that
// layer's weight columns.) On the card nothing moves: the output is a view
// of the input whose per-example blocks of positions x channels read
// transposed, and the input's gradient a view of the output's gradient the
// other way round.
#include "layer_kit.h"

namespace systole {
namespace {

class Flatten final : public Layer {
 public:
  Result<Shape> build(const Shapes& inputs, const LayerSite&, ParameterStore&) override {
    const Shape& input = inputs[0];
    input_ = input;
    return Shape{uint32_t(shape_elements(input))};
  }

  Status forward(LayerContext& context, ParameterStore&, const Inputs& inputs, Activations& output) override {
    const Activations& input = inputs[0];
    if (output.on_card) {
      // A view of the input's card tensor: nothing moves.
      output.batch = input.batch;
      output.shape = {uint32_t(shape_elements(input.shape))};
      output.values.clear();
      const auto [rows, cols] = block(input.shape, false);
      return view(input.card, rows, cols, output.card);
    }
    if (input.shape.size() != 3) {
      pass_through(input, output);
      output.shape = {uint32_t(shape_elements(input.shape))};
      return ok_status();
    }
    output.batch = input.batch;
    output.shape = {uint32_t(shape_elements(input.shape))};
    output.values.resize(input.values.size());
    permute(input.values.data(), output.values.data(), input.batch, false);
    return ok_status();
  }

  Status backward(LayerContext& context, ParameterStore&, const Inputs& inputs, const Activations&,
                  const Activations& output_gradient, const InputGradients& input_gradients) override {
    const Activations& input = inputs[0];
    Activations* input_gradient = input_gradients[0];
    if (!input_gradient) return ok_status();
    if (input_gradient->on_card) {
      input_gradient->batch = input.batch;
      input_gradient->shape = input.shape;
      input_gradient->values.clear();
      const auto [rows, cols] = block(input.shape, true);
      return view(output_gradient.card, rows, cols, input_gradient->card);
    }
    zeros_like(input, *input_gradient);
    if (input.shape.size() != 3)
      input_gradient->values = output_gradient.values;
    else
      permute(output_gradient.values.data(), input_gradient->values.data(), input.batch, true);
    return ok_status();
  }

  bool output_on_card() const override { return true; }
  bool input_on_card() const override { return true; }
  bool renames_on_card() const override { return true; }

  std::string torch_code() const override { return "torch.nn.Flatten()"; }

 private:
  // A card view's blocks, one per example: HWC read as CHW is
  // (H * W) x C transposed, and back (`inverse`) C x (H * W); an input of
  // another rank keeps its order (blocks of one row).
  static std::pair<uint32_t, uint32_t> block(const Shape& input, bool inverse) {
    if (input.size() != 3) return {1, uint32_t(shape_elements(input))};
    const uint32_t positions = input[0] * input[1], channels = input[2];
    return inverse ? std::pair{channels, positions} : std::pair{positions, channels};
  }

  // `tensor`'s values read in blocks of rows x cols transposed, into `out`.
  static Status view(const DeviceTensor& tensor, uint32_t rows, uint32_t cols, DeviceTensor& out) {
    auto viewed = tensor.blocks_transposed(rows, cols);
    if (!viewed.ok()) return Status(viewed.status().code(), "flatten: " + viewed.status().message());
    out = std::move(viewed).value();
    return ok_status();
  }

  // HWC -> CHW per example (or back when `inverse`).
  void permute(const float* from, float* to, uint32_t batch, bool inverse) const {
    const std::size_t h = input_[0], w = input_[1], c = input_[2], size = h * w * c;
    for (uint32_t n = 0; n < batch; ++n)
      for (std::size_t y = 0; y < h; ++y)
        for (std::size_t x = 0; x < w; ++x)
          for (std::size_t k = 0; k < c; ++k) {
            const std::size_t hwc = n * size + (y * w + x) * c + k, chw = n * size + (k * h + y) * w + x;
            if (inverse)
              to[hwc] = from[chw];
            else
              to[chw] = from[hwc];
          }
  }

  Shape input_;
};

}  // namespace

Result<std::unique_ptr<Layer>> make_flatten(LayerArgs&) { return std::unique_ptr<Layer>(new Flatten()); }

}  // namespace systole
