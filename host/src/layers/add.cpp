// SPDX-License-Identifier: Apache-2.0
// Add (Keras' layers.Add): the elementwise sum of two or more inputs of one
// shape, a residual connection's join. Its gradient goes unchanged to each
// input.
#include "layer_kit.h"

namespace systole {
namespace {

class Add final : public Layer {
 public:
  uint32_t min_inputs() const override { return 2; }
  uint32_t max_inputs() const override { return UINT32_MAX; }

  Result<Shape> build(const Shapes& inputs, const LayerSite&, ParameterStore&) override {
    for (std::size_t i = 1; i < inputs.size(); ++i)
      if (inputs[i] != inputs[0])
        return Status(StatusCode::kInvalidArgument,
                      "inputs: add takes inputs of one shape, got " + shape_text(inputs[0]) + " and " +
                          shape_text(inputs[i]) + " (input " + std::to_string(i) + ")");
    return inputs[0];
  }

  // ((x0 + x1) + x2) + ...: in input order.
  Status forward(LayerContext&, ParameterStore&, const Inputs& inputs, Activations& output) override {
    pass_through(inputs[0], output);
    for (std::size_t i = 1; i < inputs.size(); ++i) {
      const std::vector<float>& values = inputs[i].values;
      for (std::size_t v = 0; v < values.size(); ++v) output.values[v] += values[v];
    }
    return ok_status();
  }

  Status backward(LayerContext&, ParameterStore&, const Inputs&, const Activations&,
                  const Activations& output_gradient, const InputGradients& input_gradients) override {
    for (std::size_t i = 0; i < input_gradients.size(); ++i)
      if (input_gradients[i]) pass_through(output_gradient, *input_gradients[i]);
    return ok_status();
  }

  uint32_t torch_modules() const override { return 0; }
  std::string torch_code() const override { return "torch.add"; }
};

}  // namespace

Result<std::unique_ptr<Layer>> make_add(LayerArgs&) { return std::unique_ptr<Layer>(new Add()); }

}  // namespace systole
