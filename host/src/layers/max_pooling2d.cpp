// SPDX-License-Identifier: Apache-2.0
// MaxPooling2D on the host: the largest value of each window (the first
// one in row-major order on ties), and the gradient routed back to it.
#include "layer_kit.h"

namespace systole {
namespace {

class MaxPooling2D final : public Layer {
 public:
  MaxPooling2D(std::pair<uint32_t, uint32_t> pool, std::pair<uint32_t, uint32_t> strides)
      : ph_(pool.first), pw_(pool.second), sh_(strides.first), sw_(strides.second) {}

  Result<Shape> build(const Shapes& inputs, const LayerSite&, ParameterStore&) override {
    const Shape& input = inputs[0];
    if (input.size() != 3)
      return Status(StatusCode::kInvalidArgument,
                    "max_pooling2d expects height x width x channels, got " + shape_text(input));
    h_ = input[0];
    w_ = input[1];
    c_ = input[2];
    if (ph_ > h_ || pw_ > w_)
      return Status(StatusCode::kInvalidArgument, "pool_size: larger than the input " + shape_text(input));
    oh_ = (h_ - ph_) / sh_ + 1;
    ow_ = (w_ - pw_) / sw_ + 1;
    return Shape{oh_, ow_, c_};
  }

  Status forward(LayerContext& context, ParameterStore&, const Inputs& inputs, Activations& output) override {
    const Activations& input = inputs[0];
    output.batch = input.batch;
    output.shape = {oh_, ow_, c_};
    output.values.resize(std::size_t(input.batch) * oh_ * ow_ * c_);
    if (context.training) source_.resize(output.values.size());
    // Channels innermost: each window tap compares a contiguous row of
    // channels, and the first tap seeds the maxima.
    std::size_t at = 0;
    for (uint32_t n = 0; n < input.batch; ++n)
      for (uint32_t oy = 0; oy < oh_; ++oy)
        for (uint32_t ox = 0; ox < ow_; ++ox, at += c_) {
          float* best = output.values.data() + at;
          std::size_t* where = context.training ? source_.data() + at : nullptr;
          for (uint32_t ky = 0; ky < ph_; ++ky)
            for (uint32_t kx = 0; kx < pw_; ++kx) {
              const std::size_t tap = ((std::size_t(n) * h_ + oy * sh_ + ky) * w_ + ox * sw_ + kx) * c_;
              const float* values = input.values.data() + tap;
              const bool first = ky == 0 && kx == 0;
              for (uint32_t c = 0; c < c_; ++c)
                if (first || values[c] > best[c]) {
                  best[c] = values[c];
                  if (where) where[c] = tap + c;
                }
            }
        }
    return ok_status();
  }

  Status backward(LayerContext&, ParameterStore&, const Inputs& inputs, const Activations&,
                  const Activations& output_gradient, const InputGradients& input_gradients) override {
    const Activations& input = inputs[0];
    Activations* input_gradient = input_gradients[0];
    if (!input_gradient) return ok_status();
    zeros_like(input, *input_gradient);
    for (std::size_t i = 0; i < source_.size(); ++i)
      input_gradient->values[source_[i]] += output_gradient.values[i];
    return ok_status();
  }

  std::string torch_code() const override {
    auto text = [](uint32_t a, uint32_t b) {
      return a == b ? std::to_string(a) : "(" + std::to_string(a) + ", " + std::to_string(b) + ")";
    };
    return "torch.nn.MaxPool2d(" + text(ph_, pw_) +
           (sh_ == ph_ && sw_ == pw_ ? "" : ", stride=" + text(sh_, sw_)) + ")";
  }

 private:
  uint32_t ph_, pw_, sh_, sw_;
  uint32_t h_ = 0, w_ = 0, c_ = 0, oh_ = 0, ow_ = 0;
  std::vector<std::size_t> source_;  // input index of each output's maximum
};

}  // namespace

Result<std::unique_ptr<Layer>> make_max_pooling2d(LayerArgs& args) {
  auto pool = args.pair("pool_size", {2, 2});
  if (!pool.ok()) return pool.status();
  auto strides = args.pair("strides", *pool);
  if (!strides.ok()) return strides.status();
  auto padding = args.choice("padding", {"valid"}, "valid");
  if (!padding.ok()) return padding.status();
  return std::unique_ptr<Layer>(new MaxPooling2D(*pool, *strides));
}

}  // namespace systole
