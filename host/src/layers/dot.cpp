// SPDX-License-Identifier: Apache-2.0
// Dot: the score of a two-tower model. An example is [2, d]: the two
// towers' vectors (an embedding of two ids, then dense layers applied to
// each row); the score s = <x0, x1> + b (b a learned global bias, as matrix
// factorisation has: without it, towers that share their weights give
// s >= 0 to any two similar inputs, and a data set of mostly negatives
// cannot be fit from the start) leaves as the two logits (-s/2, s/2), so
// that softmax cross-entropy over them is the logistic loss of s (class 1:
// the pair interacts; p = sigmoid(s)) and the arg-max says s > 0.
// `row_bias: true` reads each vector's last value as its row's own bias
// (biased matrix factorisation: s = <x0[:-1], x1[:-1]> + x0[-1] + x1[-1] +
// b), so an item's popularity has a term of its own instead of a direction
// every user vector must learn. A dot product per example has no matrix
// product for the array: host work, O(batch x d). PyTorch has no such
// module; the model's torch code names it Dot, defined in the docs.
#include "systole/dot_score.h"

#include "layer_kit.h"

namespace systole {
namespace {

struct DotOptions {
  bool use_bias = true;
  bool row_bias = false;
};

Result<DotOptions> dot_options(LayerArgs& args) {
  DotOptions options;
  auto use_bias = args.boolean("use_bias", true);
  if (!use_bias.ok()) return use_bias.status();
  auto row_bias = args.boolean("row_bias", false);
  if (!row_bias.ok()) return row_bias.status();
  options.use_bias = *use_bias;
  options.row_bias = *row_bias;
  return options;
}

class Dot final : public Layer {
 public:
  explicit Dot(const DotOptions& options) : options_(options) {}

  Result<Shape> build(const Shapes& inputs, const LayerSite& site, ParameterStore& store) override {
    const Shape& input = inputs[0];
    if (input.size() != 2 || input[0] != 2)
      return Status(StatusCode::kInvalidArgument,
                    "dot expects [2, d] (two towers' vectors), got " + shape_text(input));
    if (options_.row_bias && input[1] < 2)
      return Status(StatusCode::kInvalidArgument,
                    "row_bias: the towers' vectors need at least 2 values (factors, then the bias), got " +
                        shape_text(input));
    score_ = DotScore{input[1], options_.row_bias};
    if (options_.use_bias) bias_ = store.declare(site.module() + ".bias", {}, Region::kTrainable);
    return Shape{2};
  }

  Status forward(LayerContext&, ParameterStore& store, const Inputs& inputs, Activations& output) override {
    const Activations& input = inputs[0];
    output.batch = input.batch;
    output.shape = {2};
    output.values.resize(std::size_t(input.batch) * 2);
    const float bias = options_.use_bias ? *store.values(bias_) : 0.0f;
    const uint32_t width = score_.width;
    for (uint32_t b = 0; b < input.batch; ++b) {
      const float* x = input.values.data() + std::size_t(b) * 2 * width;
      const float s = score_(x, x + width) + bias;
      output.values[2 * b] = -0.5f * s;
      output.values[2 * b + 1] = 0.5f * s;
    }
    return ok_status();
  }

  Status backward(LayerContext&, ParameterStore& store, const Inputs& inputs, const Activations&,
                  const Activations& output_gradient, const InputGradients& input_gradients) override {
    const Activations& input = inputs[0];
    Activations* input_gradient = input_gradients[0];
    if (options_.use_bias) {  // db = the sum of ds
      float bias_gradient = 0.0f;
      for (uint32_t b = 0; b < input.batch; ++b)
        bias_gradient += 0.5f * (output_gradient.values[2 * b + 1] - output_gradient.values[2 * b]);
      *store.gradient(bias_) = bias_gradient;
    }
    if (!input_gradient) return ok_status();
    zeros_like(input, *input_gradient);
    const uint32_t width = score_.width, factors = options_.row_bias ? width - 1 : width;
    for (uint32_t b = 0; b < input.batch; ++b) {
      const float ds = 0.5f * (output_gradient.values[2 * b + 1] - output_gradient.values[2 * b]);
      const float* x = input.values.data() + std::size_t(b) * 2 * width;
      float* dx = input_gradient->values.data() + std::size_t(b) * 2 * width;
      for (uint32_t j = 0; j < factors; ++j) {
        dx[j] = ds * x[width + j];
        dx[width + j] = ds * x[j];
      }
      if (options_.row_bias) dx[factors] = dx[width + factors] = ds;
    }
    return ok_status();
  }

  std::string torch_code() const override {
    std::string arguments;
    if (!options_.use_bias) arguments = "bias=False";
    if (options_.row_bias) arguments += std::string(arguments.empty() ? "" : ", ") + "row_bias=True";
    return "Dot(" + arguments + ")";
  }

 private:
  DotOptions options_;
  DotScore score_;
  std::size_t bias_ = 0;
};

}  // namespace

Result<DotScore> dot_score(const LayerConfig& config, uint32_t width) {
  if (config.type != "dot") return Status(StatusCode::kInvalidArgument, "not a dot layer: " + config.type);
  LayerArgs args(config);
  auto options = dot_options(args);
  if (!options.ok()) return options.status();
  return DotScore{width, options->row_bias};
}

Result<std::unique_ptr<Layer>> make_dot(LayerArgs& args) {
  auto options = dot_options(args);
  if (!options.ok()) return options.status();
  return std::unique_ptr<Layer>(new Dot(*options));
}

}  // namespace systole
