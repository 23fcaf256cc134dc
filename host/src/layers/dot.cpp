// Dot: the score of a two-tower model. An example is [2, d]: the two
// towers' vectors (an embedding of two ids, then dense layers applied to
// each row); the score s = <x0, x1> + b (b a learned global bias, as matrix
// factorisation has: without it, towers that share their weights give
// s >= 0 to any two similar inputs, and a data set of mostly negatives
// cannot be fit from the start) leaves as the two logits (-s/2, s/2), so
// that softmax cross-entropy over them is the logistic loss of s (class 1:
// the pair interacts; p = sigmoid(s)) and the arg-max says s > 0. A dot
// product per example has no matrix product for the array: host work,
// O(batch x d). PyTorch has no such module; the model's torch code names it
// Dot, defined in the docs.
#include "layer_kit.h"

namespace systole {
namespace {

class Dot final : public Layer {
 public:
  explicit Dot(bool use_bias) : use_bias_(use_bias) {}

  Result<Shape> build(const Shape& input, const LayerSite& site, ParameterStore& store) override {
    if (input.size() != 2 || input[0] != 2)
      return Status(StatusCode::kInvalidArgument,
                    "dot expects [2, d] (two towers' vectors), got " + shape_text(input));
    width_ = input[1];
    if (use_bias_) bias_ = store.declare(std::to_string(site.torch_index) + ".bias", {}, Region::kTrainable);
    return Shape{2};
  }

  Status forward(LayerContext&, ParameterStore& store, const Activations& input, Activations& output) override {
    output.batch = input.batch;
    output.shape = {2};
    output.values.resize(std::size_t(input.batch) * 2);
    const float bias = use_bias_ ? *store.values(bias_) : 0.0f;
    for (uint32_t b = 0; b < input.batch; ++b) {
      const float* x = input.values.data() + std::size_t(b) * 2 * width_;
      float s = bias;
      for (uint32_t j = 0; j < width_; ++j) s += x[j] * x[width_ + j];
      output.values[2 * b] = -0.5f * s;
      output.values[2 * b + 1] = 0.5f * s;
    }
    return ok_status();
  }

  Status backward(LayerContext&, ParameterStore& store, const Activations& input, const Activations&,
                  const Activations& output_gradient, Activations* input_gradient) override {
    if (use_bias_) {  // db = the sum of ds
      float bias_gradient = 0.0f;
      for (uint32_t b = 0; b < input.batch; ++b)
        bias_gradient += 0.5f * (output_gradient.values[2 * b + 1] - output_gradient.values[2 * b]);
      *store.gradient(bias_) = bias_gradient;
    }
    if (!input_gradient) return ok_status();
    zeros_like(input, *input_gradient);
    for (uint32_t b = 0; b < input.batch; ++b) {
      const float ds = 0.5f * (output_gradient.values[2 * b + 1] - output_gradient.values[2 * b]);
      const float* x = input.values.data() + std::size_t(b) * 2 * width_;
      float* dx = input_gradient->values.data() + std::size_t(b) * 2 * width_;
      for (uint32_t j = 0; j < width_; ++j) {
        dx[j] = ds * x[width_ + j];
        dx[width_ + j] = ds * x[j];
      }
    }
    return ok_status();
  }

  std::string torch_code() const override { return use_bias_ ? "Dot()" : "Dot(bias=False)"; }

 private:
  bool use_bias_;
  uint32_t width_ = 0;
  std::size_t bias_ = 0;
};

}  // namespace

Result<std::unique_ptr<Layer>> make_dot(LayerArgs& args) {
  auto use_bias = args.boolean("use_bias", true);
  if (!use_bias.ok()) return use_bias.status();
  return std::unique_ptr<Layer>(new Dot(*use_bias));
}

}  // namespace systole
