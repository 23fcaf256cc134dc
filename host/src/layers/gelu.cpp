// SPDX-License-Identifier: Apache-2.0
// Keras' gelu, exact or tanh-approximated (host).
#include <cmath>

#include "layer_kit.h"

namespace systole {
namespace {

// Keras' gelu: x Phi(x) exactly (erf), or with `approximate` the tanh form
// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), as
// torch.nn.GELU(approximate='tanh').
class Gelu final : public Layer {
 public:
  explicit Gelu(bool approximate) : approximate_(approximate) {}
  Result<Shape> build(const Shapes& inputs, const LayerSite&, ParameterStore&) override { return inputs[0]; }
  // In training the forward pass keeps each derivative (in double, as
  // computed), so that the backward pass multiplies instead of calling
  // erf and exp again: the same values, so the same bits.
  Status forward(LayerContext& context, ParameterStore&, const Inputs& inputs, Activations& output) override {
    pass_through(inputs[0], output);
    if (!context.training) {
      for (float& value : output.values) value = float(gelu(value).first);
      return ok_status();
    }
    derivatives_.resize(output.values.size());
    for (std::size_t i = 0; i < output.values.size(); ++i) {
      const auto [value, derivative] = gelu(output.values[i]);
      output.values[i] = float(value);
      derivatives_[i] = derivative;
    }
    return ok_status();
  }
  Status backward(LayerContext&, ParameterStore&, const Inputs&, const Activations&,
                  const Activations& output_gradient, const InputGradients& input_gradients) override {
    Activations* dx = input_gradients[0];
    if (!dx) return ok_status();
    pass_through(output_gradient, *dx);
    if (derivatives_.size() != dx->values.size())
      return Status(StatusCode::kInternal, "gelu: backward without its training forward pass");
    for (std::size_t i = 0; i < dx->values.size(); ++i)
      dx->values[i] = float(double(dx->values[i]) * derivatives_[i]);
    return ok_status();
  }
  std::string torch_code() const override {
    return approximate_ ? "torch.nn.GELU(approximate='tanh')" : "torch.nn.GELU()";
  }

 private:
  // The value and the derivative at x.
  std::pair<double, double> gelu(double x) const {
    constexpr double kPi = 3.14159265358979323846;
    if (!approximate_) {
      const double cdf = 0.5 * (1.0 + std::erf(x / std::sqrt(2.0)));
      const double pdf = std::exp(-0.5 * x * x) / std::sqrt(2.0 * kPi);
      return {x * cdf, cdf + x * pdf};
    }
    const double c = std::sqrt(2.0 / kPi), inner = c * (x + 0.044715 * x * x * x);
    const double t = std::tanh(inner);
    return {0.5 * x * (1.0 + t),
            0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3.0 * 0.044715 * x * x)};
  }
  bool approximate_;
  std::vector<double> derivatives_;  // at the last training forward pass's inputs
};

}  // namespace

Result<std::unique_ptr<Layer>> make_gelu(LayerArgs& args) {
  auto approximate = args.boolean("approximate", false);
  if (!approximate.ok()) return approximate.status();
  return std::unique_ptr<Layer>(new Gelu(*approximate));
}

}  // namespace systole
