// SPDX-License-Identifier: Apache-2.0
// Keras' Softmax over the last axis (host; row sums in double, in index
// order).
#include <cmath>

#include "layer_kit.h"

namespace systole {
namespace {

// Keras' Softmax(axis=-1): each row of the last axis, its largest
// subtracted; dx = y (dy - sum(dy y)).
class Softmax final : public Layer {
 public:
  Result<Shape> build(const Shapes& inputs, const LayerSite&, ParameterStore&) override {
    width_ = inputs[0].back();
    return inputs[0];
  }
  Status forward(LayerContext&, ParameterStore&, const Inputs& inputs, Activations& output) override {
    pass_through(inputs[0], output);
    for (std::size_t r = 0; r < output.values.size() / width_; ++r) {
      float* z = output.values.data() + r * width_;
      const float top = *std::max_element(z, z + width_);
      double total = 0;
      for (uint32_t i = 0; i < width_; ++i) total += std::exp(double(z[i]) - top);
      for (uint32_t i = 0; i < width_; ++i) z[i] = float(std::exp(double(z[i]) - top) / total);
    }
    return ok_status();
  }
  Status backward(LayerContext&, ParameterStore&, const Inputs& inputs, const Activations& output,
                  const Activations& output_gradient, const InputGradients& input_gradients) override {
    Activations* dx = input_gradients[0];
    if (!dx) return ok_status();
    zeros_like(inputs[0], *dx);
    for (std::size_t r = 0; r < output.values.size() / width_; ++r) {
      const float* y = output.values.data() + r * width_;
      const float* dy = output_gradient.values.data() + r * width_;
      double dot = 0;
      for (uint32_t i = 0; i < width_; ++i) dot += double(dy[i]) * y[i];
      for (uint32_t i = 0; i < width_; ++i) dx->values[r * width_ + i] = float(double(y[i]) * (dy[i] - dot));
    }
    return ok_status();
  }
  std::string torch_code() const override { return "torch.nn.Softmax(dim=-1)"; }

 private:
  uint32_t width_ = 0;
};

}  // namespace

Result<std::unique_ptr<Layer>> make_softmax(LayerArgs&) { return std::unique_ptr<Layer>(new Softmax()); }

}  // namespace systole
