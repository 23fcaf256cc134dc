// SPDX-License-Identifier: Apache-2.0
// KerasHub's PositionEmbedding: a learned vector per position (host; the
// table's gradient, a sum over the batch, is an fp32 sum in the array's
// order).

#include "layer_kit.h"

namespace systole {
namespace {

// KerasHub's PositionEmbedding(sequence_length): a learned vector per
// position of a [positions, width] input, returned in the input's shape
// (add it to the token embeddings with an add layer). Its table is the
// reference module's nn.Embedding(sequence_length, width) "weight".
class PositionEmbedding final : public Layer {
 public:
  explicit PositionEmbedding(uint32_t length) : length_(length) {}
  Result<Shape> build(const Shapes& inputs, const LayerSite& site, ParameterStore& store) override {
    const Shape& input = inputs[0];
    if (input.size() != 2)
      return invalid("position_embedding takes [positions, width] inputs, got " + shape_text(input));
    if (input[0] > length_)
      return invalid("sequence_length: the input has " + std::to_string(input[0]) + " positions, the table " +
                     std::to_string(length_));
    positions_ = input[0];
    width_ = input[1];
    table_ = store.declare(site.module() + ".weight", {length_, width_}, Region::kTrainable);
    return input;
  }
  void initialize(ParameterStore& store, std::mt19937_64& rng) const override {
    float* table = store.values(table_);
    glorot_uniform(rng, length_, width_, uint64_t(length_) * width_,
                   [&](std::size_t i, float v) { table[i] = v; });
  }
  Status forward(LayerContext&, ParameterStore& store, const Inputs& inputs, Activations& output) override {
    pass_through(inputs[0], output);
    const float* table = store.values(table_);
    const std::size_t example = std::size_t(positions_) * width_;
    for (uint32_t b = 0; b < output.batch; ++b)
      std::copy_n(table, example, output.values.data() + b * example);
    return ok_status();
  }
  // The table's gradient is the sum of dy over the batch, in fp32 in a
  // fixed order (MatmulExecutor::sum); positions past the input's have
  // none.
  Status backward(LayerContext& context, ParameterStore& store, const Inputs& inputs, const Activations&,
                  const Activations& output_gradient, const InputGradients& input_gradients) override {
    float* gradient = store.gradient(table_);
    const std::size_t example = std::size_t(positions_) * width_;
    std::fill_n(gradient, std::size_t(length_) * width_, 0.0f);
    SumCall sums;
    sums.x = output_gradient.values.data();
    sums.rows = output_gradient.batch;
    sums.width = uint32_t(example);
    sums.row_positions = positions_;
    sums.out = gradient;
    SYSTOLE_RETURN_IF_ERROR(context.matmul->sum(sums));
    if (input_gradients[0]) zeros_like(inputs[0], *input_gradients[0]);  // the values are not used
    return ok_status();
  }
  std::string torch_code() const override {
    return "torch.nn.Embedding(" + std::to_string(length_) + ", " + std::to_string(width_) + ")";
  }

 private:
  uint32_t length_, positions_ = 0, width_ = 0;
  std::size_t table_ = 0;
};

}  // namespace

Result<std::unique_ptr<Layer>> make_position_embedding(LayerArgs& args) {
  if (!args.has("sequence_length"))
    return invalid("sequence_length: required (the positions the table holds)");
  auto length = args.positive("sequence_length", 1);
  if (!length.ok()) return length.status();
  return std::unique_ptr<Layer>(new PositionEmbedding(*length));
}

}  // namespace systole
