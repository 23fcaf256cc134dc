// SPDX-License-Identifier: Apache-2.0
// Flatten: height x width x channels to one vector in channel-major order
// (C, H, W), torch.nn.Flatten's order on NCHW tensors, so that the weights
// of a Dense layer after it mean the same in PyTorch. (Keras flattens in
// (H, W, C) order; the model is the same up to a permutation of that
// layer's weight columns.)
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

  Status forward(LayerContext&, ParameterStore&, const Inputs& inputs, Activations& output) override {
    const Activations& input = inputs[0];
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

  Status backward(LayerContext&, ParameterStore&, const Inputs& inputs, const Activations&,
                  const Activations& output_gradient, const InputGradients& input_gradients) override {
    const Activations& input = inputs[0];
    Activations* input_gradient = input_gradients[0];
    if (!input_gradient) return ok_status();
    zeros_like(input, *input_gradient);
    if (input.shape.size() != 3)
      input_gradient->values = output_gradient.values;
    else
      permute(output_gradient.values.data(), input_gradient->values.data(), input.batch, true);
    return ok_status();
  }

  std::string torch_code() const override { return "torch.nn.Flatten()"; }

 private:
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
