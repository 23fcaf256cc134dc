// SPDX-License-Identifier: Apache-2.0
// Dense: y = x W^T + b (torch.nn.Linear's layout, weight [units, inputs]),
// ReLU fused into the product on the array when `activation: relu`. On an
// input of [n, features] it applies to each of the n rows, as Keras' Dense
// and torch.nn.Linear do on the last axis (the towers of a two-tower model):
// the batch's n rows are one product's M. Between two dense layers, with
// the parameters on the card, the activations and their gradients stay
// there (the ReLU mask by the card's vector engine).
#include <cmath>

#include "layer_kit.h"

namespace systole {
namespace {

class Dense final : public Layer {
 public:
  Dense(uint32_t units, bool relu, bool use_bias) : units_(units), relu_(relu), use_bias_(use_bias) {}

  Result<Shape> build(const Shapes& inputs, const LayerSite& site, ParameterStore& store) override {
    const Shape& input = inputs[0];
    if (input.size() != 1 && input.size() != 2)
      return Status(StatusCode::kInvalidArgument,
                    "dense expects a flat input or rows of one, got " + shape_text(input) +
                        " (add a flatten layer before it, or set model.input_shape)");
    inputs_ = input.back();
    rows_ = input.size() == 2 ? input[0] : 1;
    Shape output = input;
    output.back() = units_;
    const std::string prefix = site.module();
    weight_ = store.declare(prefix + ".weight", {units_, inputs_}, Region::kTrainable);
    if (use_bias_) bias_ = store.declare(prefix + ".bias", {units_}, Region::kTrainable);
    return output;
  }

  void initialize(ParameterStore& store, std::mt19937_64& rng) const override {
    // Glorot uniform, drawn in Keras' kernel order [inputs][units].
    glorot_uniform(rng, inputs_, units_, uint64_t(inputs_) * units_, [&](std::size_t i, float value) {
      const std::size_t in = i / units_, out = i % units_;
      store.values(weight_)[out * inputs_ + in] = value;
    });
  }

  Status forward(LayerContext& context, ParameterStore& store, const Inputs& inputs,
                 Activations& output) override {
    const Activations& input = inputs[0];
    output.batch = input.batch;
    output.shape = input.shape;
    output.shape.back() = units_;
    SYSTOLE_RETURN_IF_ERROR(place_values(context, output));
    MatmulCall call;
    call.m = input.batch * rows_;
    call.k = inputs_;
    call.n = units_;
    call.a = input.host_values();
    call.a_card = input.card;
    call.b = store.values(weight_);
    call.b_card = store.card_values(weight_);
    call.b_transposed = true;
    if (use_bias_) {
      call.bias = store.values(bias_);
      call.bias_card = store.card_values(bias_);
    }
    call.relu = relu_;
    call.c = output.on_card ? nullptr : output.values.data();
    call.c_card = output.card;
    return context.matmul->run(call);
  }

  Status backward(LayerContext& context, ParameterStore& store, const Inputs& inputs,
                  const Activations& output, const Activations& output_gradient,
                  const InputGradients& input_gradients) override {
    const Activations& input = inputs[0];
    Activations* input_gradient = input_gradients[0];
    const uint32_t batch = input.batch * rows_;  // the product's M
    const float* delta = output_gradient.host_values();
    DeviceTensor delta_card = output_gradient.card;
    if (relu_) {
      if (delta_card) {
        SYSTOLE_RETURN_IF_ERROR(card_values(context, masked_card_, output_gradient.elements()));
        SYSTOLE_RETURN_IF_ERROR(context.matmul->relu_mask_on_card(delta_card, output.card, masked_card_));
        delta_card = masked_card_;
      } else {
        relu_mask(output_gradient.values, output.values, masked_);
        delta = masked_.data();
      }
    }
    std::vector<MatmulCall> calls;
    MatmulCall dw;  // dW [units x inputs] = delta^T x, the batch as K
    dw.m = units_;
    dw.k = batch;
    dw.n = inputs_;
    dw.a = delta;
    dw.a_transposed = true;
    dw.a_card = delta_card;
    dw.b = input.host_values();
    dw.b_card = input.card;
    dw.c = store.gradient(weight_);
    dw.c_card = store.card_gradient(weight_);
    calls.push_back(dw);
    if (use_bias_) {
      SumCall db;  // db = the sum of delta's rows, in fp32
      db.x = delta;
      db.x_card = delta_card;
      db.rows = batch;
      db.width = units_;
      db.out = store.gradient(bias_);
      db.out_card = store.card_gradient(bias_);
      SYSTOLE_RETURN_IF_ERROR(context.matmul->sum(db));
    }
    if (input_gradient) {
      SYSTOLE_RETURN_IF_ERROR(gradient_like(context, input, *input_gradient));
      MatmulCall dx;  // dx = delta W
      dx.m = batch;
      dx.k = units_;
      dx.n = inputs_;
      dx.a = delta;
      dx.a_card = delta_card;
      dx.b = store.values(weight_);
      dx.b_card = store.card_values(weight_);
      dx.c = input_gradient->on_card ? nullptr : input_gradient->values.data();
      dx.c_card = input_gradient->card;
      calls.push_back(dx);
    }
    return context.matmul->run(calls);
  }

  bool output_on_card() const override { return true; }
  bool input_on_card() const override { return true; }

  uint32_t torch_modules() const override { return relu_ ? 2 : 1; }
  std::string torch_code() const override {
    return "torch.nn.Linear(" + std::to_string(inputs_) + ", " + std::to_string(units_) +
           (use_bias_ ? "" : ", bias=False") + ")" + (relu_ ? ", torch.nn.ReLU()" : "");
  }

 private:
  uint32_t units_, inputs_ = 0, rows_ = 1;
  bool relu_, use_bias_;
  std::size_t weight_ = 0, bias_ = 0;
  // The fused ReLU's masked gradient: on the host, or on the card when the
  // gradient is there (card_values).
  std::vector<float> masked_;
  DeviceTensor masked_card_;
};

}  // namespace

Result<std::unique_ptr<Layer>> make_dense(LayerArgs& args) {
  if (!args.has("units")) return Status(StatusCode::kInvalidArgument, "units: required");
  auto units = args.positive("units", 1);
  if (!units.ok()) return units.status();
  auto relu = fused_relu(args);
  if (!relu.ok()) return relu.status();
  auto use_bias = args.boolean("use_bias", true);
  if (!use_bias.ok()) return use_bias.status();
  return std::unique_ptr<Layer>(new Dense(*units, *relu, *use_bias));
}

}  // namespace systole
