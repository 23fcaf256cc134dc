// SPDX-License-Identifier: Apache-2.0
// Keras' LayerNormalization over the last axis (host; row sums in double,
// in index order; gamma's and beta's gradients, sums over the batch, are
// fp32 sums in the array's order, on the card when the model is).
#include <cmath>
#include <cstdio>

#include "layer_kit.h"

namespace systole {
namespace {

std::string number_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

// Keras' LayerNormalization(axis=-1): over each row of the last axis,
// y = (x - mean) / sqrt(variance + epsilon) * gamma + beta, the variance
// the biased one (as Keras and torch.nn.LayerNorm compute it).
class LayerNormalization final : public Layer {
 public:
  explicit LayerNormalization(float epsilon) : epsilon_(epsilon) {}
  Result<Shape> build(const Shapes& inputs, const LayerSite& site, ParameterStore& store) override {
    width_ = inputs[0].back();
    gamma_ = store.declare(site.module() + ".weight", {width_}, Region::kTrainable);
    beta_ = store.declare(site.module() + ".bias", {width_}, Region::kTrainable);
    return inputs[0];
  }
  void initialize(ParameterStore& store, std::mt19937_64&) const override {
    std::fill_n(store.values(gamma_), width_, 1.0f);
  }
  Status forward(LayerContext&, ParameterStore& store, const Inputs& inputs, Activations& output) override {
    const Activations& input = inputs[0];
    pass_through(input, output);
    const std::size_t rows = input.values.size() / width_;
    normalized_.resize(input.values.size());
    inverse_std_.resize(rows);
    const float* gamma = store.values(gamma_);
    const float* beta = store.values(beta_);
    for (std::size_t r = 0; r < rows; ++r) {
      const float* x = input.values.data() + r * width_;
      double sum = 0, squares = 0;
      for (uint32_t i = 0; i < width_; ++i) sum += x[i];
      const double mean = sum / width_;
      for (uint32_t i = 0; i < width_; ++i) squares += (x[i] - mean) * (x[i] - mean);
      const double inverse = 1.0 / std::sqrt(squares / width_ + double(epsilon_));
      inverse_std_[r] = inverse;
      for (uint32_t i = 0; i < width_; ++i) {
        const float hat = float((x[i] - mean) * inverse);
        normalized_[r * width_ + i] = hat;
        output.values[r * width_ + i] = hat * gamma[i] + beta[i];
      }
    }
    return ok_status();
  }
  // dgamma = the sums of (dy * x-hat) over the rows and dbeta those of dy,
  // in fp32 in a fixed order (MatmulExecutor::sum).
  Status backward(LayerContext& context, ParameterStore& store, const Inputs& inputs, const Activations&,
                  const Activations& output_gradient, const InputGradients& input_gradients) override {
    const std::size_t rows = output_gradient.values.size() / width_;
    const float* gamma = store.values(gamma_);
    scaled_.resize(output_gradient.values.size());
    for (std::size_t i = 0; i < scaled_.size(); ++i) scaled_[i] = output_gradient.values[i] * normalized_[i];
    SumCall sums;
    sums.rows = uint32_t(rows);
    sums.width = width_;
    sums.x = scaled_.data();
    sums.out = store.gradient(gamma_);
    SYSTOLE_RETURN_IF_ERROR(context.matmul->sum(sums));
    sums.x = output_gradient.values.data();
    sums.out = store.gradient(beta_);
    SYSTOLE_RETURN_IF_ERROR(context.matmul->sum(sums));
    Activations* dx = input_gradients[0];
    if (!dx) return ok_status();
    zeros_like(inputs[0], *dx);
    for (std::size_t r = 0; r < rows; ++r) {
      const float* dy = output_gradient.values.data() + r * width_;
      const float* hat = normalized_.data() + r * width_;
      double sum = 0, dot = 0;  // of dy * gamma, and of that times x-hat
      for (uint32_t i = 0; i < width_; ++i) {
        const double g = double(dy[i]) * gamma[i];
        sum += g;
        dot += g * hat[i];
      }
      for (uint32_t i = 0; i < width_; ++i) {
        const double g = double(dy[i]) * gamma[i];
        dx->values[r * width_ + i] = float(inverse_std_[r] * (g - sum / width_ - hat[i] * dot / width_));
      }
    }
    return ok_status();
  }
  std::string torch_code() const override {
    return "torch.nn.LayerNorm(" + std::to_string(width_) + ", eps=" + number_text(epsilon_) + ")";
  }

 private:
  float epsilon_;
  uint32_t width_ = 0;
  std::size_t gamma_ = 0, beta_ = 0;
  std::vector<float> normalized_, scaled_;
  std::vector<double> inverse_std_;
};

}  // namespace

Result<std::unique_ptr<Layer>> make_layer_normalization(LayerArgs& args) {
  auto epsilon = args.number("epsilon", 1e-3f, 0.0f, 1.0f);  // Keras' default; PyTorch's is 1e-5
  if (!epsilon.ok()) return epsilon.status();
  if (!(*epsilon > 0)) return invalid("epsilon: must be a positive number");
  return std::unique_ptr<Layer>(new LayerNormalization(*epsilon));
}

}  // namespace systole
