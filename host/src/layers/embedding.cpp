// SPDX-License-Identifier: Apache-2.0
// Embedding: integer ids -> rows of a table (torch.nn.Embedding's layout,
// weight [rows, output_dim]). An example is n ids (floats holding exact
// integers, as the input pipeline delivers hash buckets); its output is
// [n, output_dim]. `input_dim` is one size (one table the n columns share,
// as Keras' Embedding) or n sizes (a table per column, stacked in the one
// tensor: column c's ids are offset by the sizes before it).
//
// Forward gathers rows on the host: a gather has no products for the array.
// Backward gives a row-sparse gradient: for each row a step touched, the sum
// of its output gradients in example order. In training the replicas
// combine theirs with two dense all-reduces in replica order: one count per
// table row (which rows any replica touched), then those rows' values only,
// so a step moves rows + touched rows x output_dim values instead of the
// whole table, and every replica ends with the same bits.
//
// With `mask_zero` (Keras' argument) id 0 is padding: the output carries a
// padding mask (Activations::mask) that is 0 where the id is 0, for
// attention and pooling downstream. Row 0 is still a row of the table.
#include <algorithm>
#include <sstream>

#include "layer_kit.h"

namespace systole {
namespace {

class Embedding final : public Layer {
 public:
  Embedding(std::vector<uint32_t> input_dims, uint32_t output_dim, bool mask_zero)
      : input_dims_(std::move(input_dims)), width_(output_dim), mask_zero_(mask_zero) {}

  Result<Shape> build(const Shapes& inputs, const LayerSite& site, ParameterStore& store) override {
    const Shape& input = inputs[0];
    if (input.size() != 1)
      return Status(StatusCode::kInvalidArgument,
                    "embedding expects a flat input of ids, got " + shape_text(input));
    columns_ = input[0];
    if (input_dims_.size() != 1 && input_dims_.size() != columns_)
      return Status(StatusCode::kInvalidArgument, "input_dim: " + std::to_string(input_dims_.size()) +
                                                      " sizes for " + std::to_string(columns_) +
                                                      " id columns (give one size, or one per column)");
    offsets_.clear();
    rows_ = 0;
    for (uint32_t c = 0; c < columns_; ++c) {
      const uint32_t dim = input_dims_.size() == 1 ? input_dims_[0] : input_dims_[c];
      offsets_.push_back(input_dims_.size() == 1 ? 0 : rows_);
      if (input_dims_.size() != 1 || c == 0) rows_ += dim;
      if (uint64_t(rows_) * width_ > (uint64_t(1) << 31))
        return Status(StatusCode::kInvalidArgument, "input_dim x output_dim: more than 2^31 table values");
    }
    table_ = store.declare(site.module() + ".weight", {rows_, width_}, Region::kTable);
    return Shape{columns_, width_};
  }

  void initialize(ParameterStore& store, std::mt19937_64& rng) const override {
    // Keras' Embedding default: uniform in [-0.05, 0.05].
    std::uniform_real_distribution<float> uniform(-0.05f, 0.05f);
    float* table = store.values(table_);
    for (std::size_t i = 0; i < std::size_t(rows_) * width_; ++i) table[i] = uniform(rng);
  }

  Status forward(LayerContext&, ParameterStore& store, const Inputs& inputs, Activations& output) override {
    const Activations& input = inputs[0];
    output.batch = input.batch;
    output.shape = {columns_, width_};
    output.values.resize(std::size_t(input.batch) * columns_ * width_);
    rows_of_.resize(std::size_t(input.batch) * columns_);
    const float* table = store.values(table_);
    for (std::size_t i = 0; i < rows_of_.size(); ++i) {
      const uint32_t c = uint32_t(i % columns_);
      const uint32_t dim = input_dims_.size() == 1 ? input_dims_[0] : input_dims_[c];
      const float id = input.values[i];
      if (!(id >= 0 && id < float(dim)) || id != float(uint32_t(id))) {
        std::ostringstream what;
        what << "embedding: example " << i / columns_ << ", column " << c << ": id " << id
             << " is not an integer in [0, " << dim << ")";
        return Status(StatusCode::kInvalidArgument, what.str());
      }
      rows_of_[i] = offsets_[c] + uint32_t(id);
      std::copy_n(table + std::size_t(rows_of_[i]) * width_, width_, output.values.data() + i * width_);
    }
    if (mask_zero_) {
      output.mask.resize(rows_of_.size());
      for (std::size_t i = 0; i < rows_of_.size(); ++i) output.mask[i] = input.values[i] != 0.0f;
    }
    return ok_status();
  }

  Status backward(LayerContext& context, ParameterStore& store, const Inputs& inputs, const Activations&,
                  const Activations& output_gradient, const InputGradients& input_gradients) override {
    const Activations& input = inputs[0];
    Activations* input_gradient = input_gradients[0];
    if (input_gradient) zeros_like(input, *input_gradient);  // ids have no gradient
    // This replica's rows: the output gradients of each row's uses, summed
    // in example order.
    uses_.clear();
    for (std::size_t i = 0; i < rows_of_.size(); ++i) uses_.push_back({rows_of_[i], uint32_t(i)});
    std::sort(uses_.begin(), uses_.end());
    local_.rows.clear();
    local_.values.clear();
    for (std::size_t u = 0; u < uses_.size(); ++u) {
      const float* g = output_gradient.values.data() + std::size_t(uses_[u].second) * width_;
      if (u == 0 || uses_[u].first != uses_[u - 1].first) {
        local_.rows.push_back(uses_[u].first);
        local_.values.insert(local_.values.end(), g, g + width_);
      } else {
        float* sum = local_.values.data() + local_.values.size() - width_;
        for (uint32_t j = 0; j < width_; ++j) sum[j] += g[j];
      }
    }
    RowSparse& gradient = store.sparse_gradient(table_);
    if (!context.all_reduce_sum) {
      gradient = local_;
      return ok_status();
    }
    // The rows any replica touched, then their summed values.
    touched_.assign(rows_, 0.0f);
    for (uint32_t row : local_.rows) touched_[row] = 1.0f;
    SYSTOLE_RETURN_IF_ERROR(context.all_reduce_sum(touched_));
    gradient.rows.clear();
    for (uint32_t row = 0; row < rows_; ++row)
      if (touched_[row] != 0.0f) gradient.rows.push_back(row);
    gradient.values.assign(gradient.rows.size() * width_, 0.0f);
    std::size_t at = 0;
    for (std::size_t i = 0; i < local_.rows.size(); ++i) {
      while (gradient.rows[at] != local_.rows[i]) ++at;  // both ascending; every local row is there
      std::copy_n(local_.values.data() + i * width_, width_, gradient.values.data() + at * width_);
    }
    return context.all_reduce_sum(gradient.values);
  }

  std::string torch_code() const override {
    return "torch.nn.Embedding(" + std::to_string(rows_) + ", " + std::to_string(width_) + ")";
  }

 private:
  std::vector<uint32_t> input_dims_;
  uint32_t width_, columns_ = 0, rows_ = 0;
  bool mask_zero_;
  std::vector<uint32_t> offsets_;  // per column, into the table
  std::size_t table_ = 0;
  std::vector<uint32_t> rows_of_;                    // the last forward's table row per id
  std::vector<std::pair<uint32_t, uint32_t>> uses_;  // (row, id position)
  RowSparse local_;
  std::vector<float> touched_;
};

}  // namespace

Result<std::unique_ptr<Layer>> make_embedding(LayerArgs& args) {
  for (const char* key : {"input_dim", "output_dim"})
    if (!args.has(key)) return Status(StatusCode::kInvalidArgument, std::string(key) + ": required");
  auto input_dims = args.positive_list("input_dim");
  if (!input_dims.ok()) return input_dims.status();
  auto output_dim = args.positive("output_dim", 1);
  if (!output_dim.ok()) return output_dim.status();
  auto mask_zero = args.boolean("mask_zero", false);
  if (!mask_zero.ok()) return mask_zero.status();
  return std::unique_ptr<Layer>(new Embedding(*input_dims, *output_dim, *mask_zero));
}

}  // namespace systole
