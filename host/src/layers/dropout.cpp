// SPDX-License-Identifier: Apache-2.0
// Dropout (inverted, as Keras and PyTorch): in training each value is kept
// with probability 1 - rate and scaled by 1 / (1 - rate). The mask is drawn
// from (seed, step, replica, layer), so runs repeat and a resumed run draws
// the masks an uninterrupted one would.
#include "layer_kit.h"

namespace systole {
namespace {

class Dropout final : public Layer {
 public:
  explicit Dropout(float rate) : rate_(rate) {}

  Result<Shape> build(const Shapes& inputs, const LayerSite& site, ParameterStore&) override {
    const Shape& input = inputs[0];
    layer_ = site.index;
    return input;
  }

  Status forward(LayerContext& context, ParameterStore&, const Inputs& inputs, Activations& output) override {
    const Activations& input = inputs[0];
    pass_through(input, output);
    if (!context.training || rate_ == 0.0f) {
      mask_.clear();
      return ok_status();
    }
    std::seed_seq sequence{uint32_t(context.seed), uint32_t(context.seed >> 32),
                           uint32_t(context.step), uint32_t(context.step >> 32),
                           context.replica,        layer_};
    std::mt19937_64 rng(sequence);
    std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
    const float scale = 1.0f / (1.0f - rate_);
    mask_.resize(output.values.size());
    for (std::size_t i = 0; i < mask_.size(); ++i) {
      mask_[i] = uniform(rng) >= rate_ ? scale : 0.0f;
      output.values[i] *= mask_[i];
    }
    return ok_status();
  }

  Status backward(LayerContext&, ParameterStore&, const Inputs& inputs, const Activations&,
                  const Activations& output_gradient, const InputGradients& input_gradients) override {
    const Activations& input = inputs[0];
    Activations* input_gradient = input_gradients[0];
    if (!input_gradient) return ok_status();
    pass_through(output_gradient, *input_gradient);
    input_gradient->shape = input.shape;
    if (!mask_.empty())
      for (std::size_t i = 0; i < mask_.size(); ++i) input_gradient->values[i] *= mask_[i];
    return ok_status();
  }

  std::string torch_code() const override {
    char text[64];
    std::snprintf(text, sizeof text, "torch.nn.Dropout(%g)", double(rate_));
    return text;
  }

 private:
  float rate_;
  uint32_t layer_ = 0;
  std::vector<float> mask_;  // 0 or 1 / (1 - rate) per value
};

}  // namespace

Result<std::unique_ptr<Layer>> make_dropout(LayerArgs& args) {
  if (!args.has("rate")) return Status(StatusCode::kInvalidArgument, "rate: required");
  auto rate = args.number("rate", 0.0f, 0.0f, 1.0f);
  if (!rate.ok()) return rate.status();
  return std::unique_ptr<Layer>(new Dropout(*rate));
}

}  // namespace systole
