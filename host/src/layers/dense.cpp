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
    call.a = input.operand();
    call.b = store.operand(weight_);
    call.b_transposed = true;
    if (use_bias_) call.bias = store.operand(bias_);
    call.relu = relu_;
    call.c = output.destination();
    return context.matmul->run(call);
  }

  Status backward(LayerContext& context, ParameterStore& store, const Inputs& inputs,
                  const Activations& output, const Activations& output_gradient,
                  const InputGradients& input_gradients) override {
    const Activations& input = inputs[0];
    Activations* input_gradient = input_gradients[0];
    const uint32_t batch = input.batch * rows_;  // the product's M
    Operand delta = output_gradient.operand();
    if (relu_) {
      // On the card where the gradient is (the card's vector engine).
      masked_.batch = output_gradient.batch;
      masked_.shape = output_gradient.shape;
      masked_.on_card = output_gradient.on_card;
      SYSTOLE_RETURN_IF_ERROR(place_values(context, masked_));
      SYSTOLE_RETURN_IF_ERROR(
          context.matmul->relu_mask(delta, output.operand(), masked_.destination(), masked_.elements()));
      delta = masked_.operand();
    }
    std::vector<MatmulCall> calls;
    MatmulCall dw;  // dW [units x inputs] = delta^T x, the batch as K
    dw.m = units_;
    dw.k = batch;
    dw.n = inputs_;
    dw.a = delta;
    dw.a_transposed = true;
    dw.b = input.operand();
    dw.c = store.gradient_destination(weight_);
    calls.push_back(dw);
    if (use_bias_) {
      SumCall db;  // db = the sum of delta's rows, in fp32
      db.x = delta;
      db.rows = batch;
      db.width = units_;
      db.out = store.gradient_destination(bias_);
      SYSTOLE_RETURN_IF_ERROR(context.matmul->sum(db));
    }
    if (input_gradient) {
      SYSTOLE_RETURN_IF_ERROR(gradient_like(context, input, *input_gradient));
      MatmulCall dx;  // dx = delta W
      dx.m = batch;
      dx.k = units_;
      dx.n = inputs_;
      dx.a = delta;
      dx.b = store.operand(weight_);
      dx.c = input_gradient->destination();
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
  // The fused ReLU's masked gradient, where the gradient is.
  Activations masked_;
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
