// SPDX-License-Identifier: Apache-2.0
// Keras' Reshape: the same values, another shape (host).

#include "layer_kit.h"

namespace systole {
namespace {

// Keras' Reshape(target_shape): the same values, another shape.
class Reshape final : public Layer {
 public:
  explicit Reshape(Shape target) : target_(std::move(target)) {}
  Result<Shape> build(const Shapes& inputs, const LayerSite&, ParameterStore&) override {
    if (shape_elements(inputs[0]) != shape_elements(target_))
      return invalid("target_shape: " + shape_text(target_) + " holds " +
                     std::to_string(shape_elements(target_)) + " values, the input " + shape_text(inputs[0]) +
                     " " + std::to_string(shape_elements(inputs[0])));
    input_ = inputs[0];
    return target_;
  }
  Status forward(LayerContext&, ParameterStore&, const Inputs& inputs, Activations& output) override {
    pass_through(inputs[0], output);
    output.shape = target_;
    return ok_status();
  }
  Status backward(LayerContext&, ParameterStore&, const Inputs&, const Activations&,
                  const Activations& output_gradient, const InputGradients& input_gradients) override {
    if (!input_gradients[0]) return ok_status();
    pass_through(output_gradient, *input_gradients[0]);
    input_gradients[0]->shape = input_;
    return ok_status();
  }
  std::string torch_code() const override {
    std::string dims;
    for (uint32_t d : target_) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    return "torch.nn.Unflatten(1, (" + dims + (target_.size() == 1 ? ",))" : "))");
  }

  bool passes_mask() const override { return false; }  // positions rearranged

 private:
  Shape target_, input_;
};

}  // namespace

Result<std::unique_ptr<Layer>> make_reshape(LayerArgs& args) {
  auto target = args.positive_list("target_shape");
  if (!target.ok()) return target.status();
  return std::unique_ptr<Layer>(new Reshape(*target));
}

}  // namespace systole
