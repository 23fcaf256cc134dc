// SPDX-License-Identifier: Apache-2.0
// Keras' GlobalAveragePooling1D: the mean over the positions (host; sums
// in double, in index order).

#include "layer_kit.h"

namespace systole {
namespace {

// Keras' GlobalAveragePooling1D: [positions, width] to the mean over the
// positions, [width].
class GlobalAveragePooling1D final : public Layer {
 public:
  Result<Shape> build(const Shapes& inputs, const LayerSite&, ParameterStore&) override {
    const Shape& input = inputs[0];
    if (input.size() != 2)
      return invalid("global_average_pooling1d takes [positions, width] inputs, got " + shape_text(input));
    positions_ = input[0];
    width_ = input[1];
    return Shape{width_};
  }
  // The mean over the positions that hold a token (all of them without a
  // padding mask); an example with none gives zeros.
  Status forward(LayerContext&, ParameterStore&, const Inputs& inputs, Activations& output) override {
    const Activations& input = inputs[0];
    output.batch = input.batch;
    output.shape = {width_};
    output.values.assign(std::size_t(input.batch) * width_, 0.0f);
    tokens_.assign(input.batch, 0.0f);
    for (uint32_t b = 0; b < input.batch; ++b) {
      const uint8_t* mask = input.mask.empty() ? nullptr : input.mask.data() + std::size_t(b) * positions_;
      uint32_t tokens = 0;
      for (uint32_t p = 0; p < positions_; ++p) tokens += !mask || mask[p];
      tokens_[b] = float(tokens);
      for (uint32_t i = 0; i < width_; ++i) {
        double sum = 0;
        for (uint32_t p = 0; p < positions_; ++p)
          if (!mask || mask[p]) sum += input.values[(std::size_t(b) * positions_ + p) * width_ + i];
        output.values[std::size_t(b) * width_ + i] = tokens ? float(sum / tokens) : 0.0f;
      }
    }
    return ok_status();
  }
  Status backward(LayerContext&, ParameterStore&, const Inputs& inputs, const Activations&,
                  const Activations& output_gradient, const InputGradients& input_gradients) override {
    Activations* dx = input_gradients[0];
    if (!dx) return ok_status();
    zeros_like(inputs[0], *dx);
    const std::vector<uint8_t>& mask = inputs[0].mask;
    for (uint32_t b = 0; b < output_gradient.batch; ++b)
      for (uint32_t p = 0; p < positions_; ++p) {
        if (!mask.empty() && !mask[std::size_t(b) * positions_ + p]) continue;  // padding: no gradient
        for (uint32_t i = 0; i < width_; ++i)
          dx->values[(std::size_t(b) * positions_ + p) * width_ + i] =
              output_gradient.values[std::size_t(b) * width_ + i] / tokens_[b];
      }
    return ok_status();
  }
  uint32_t torch_modules() const override { return 0; }
  std::string torch_code() const override { return "mean over the tokens (dim=1)"; }

 private:
  uint32_t positions_ = 0, width_ = 0;
  std::vector<float> tokens_;  // the last forward's positions holding a token, per example
};

}  // namespace

Result<std::unique_ptr<Layer>> make_global_average_pooling1d(LayerArgs&) {
  return std::unique_ptr<Layer>(new GlobalAveragePooling1D());
}

}  // namespace systole
