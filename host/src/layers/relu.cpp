// SPDX-License-Identifier: Apache-2.0
// ReLU as a layer of its own, on the host (Dense and Conv2D fuse it into
// the product instead with `activation: relu`).
#include <algorithm>

#include "layer_kit.h"

namespace systole {
namespace {

class Relu final : public Layer {
 public:
  Result<Shape> build(const Shapes& inputs, const LayerSite&, ParameterStore&) override { return inputs[0]; }

  Status forward(LayerContext&, ParameterStore&, const Inputs& inputs, Activations& output) override {
    const Activations& input = inputs[0];
    pass_through(input, output);
    for (float& value : output.values) value = value > 0.0f ? value : 0.0f;
    return ok_status();
  }

  Status backward(LayerContext&, ParameterStore&, const Inputs& inputs, const Activations& output,
                  const Activations& output_gradient, const InputGradients& input_gradients) override {
    const Activations& input = inputs[0];
    Activations* input_gradient = input_gradients[0];
    if (!input_gradient) return ok_status();
    zeros_like(input, *input_gradient);
    relu_mask(output_gradient.values, output.values, input_gradient->values);
    return ok_status();
  }

  std::string torch_code() const override { return "torch.nn.ReLU()"; }
};

}  // namespace

Result<std::unique_ptr<Layer>> make_relu(LayerArgs&) { return std::unique_ptr<Layer>(new Relu()); }

}  // namespace systole
