// SPDX-License-Identifier: Apache-2.0
// The host-side layers of sequence models, with Keras' names and
// arguments, each over the last axis of its input: Reshape,
// LayerNormalization, GELU, Softmax, a learned PositionEmbedding and
// GlobalAveragePooling1D. Sums over a row run in double, in index order;
// a parameter's gradient, a sum over the batch, runs on the array, as the
// other layers' do.
#include <cmath>
#include <cstdio>

#include "layer_kit.h"

namespace systole {
namespace {

Status invalid(const std::string& message) { return Status(StatusCode::kInvalidArgument, message); }

std::string number_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

// Keras' Reshape(target_shape): the same values, another shape.
class Reshape final : public Layer {
 public:
  explicit Reshape(Shape target) : target_(std::move(target)) {}
  Result<Shape> build(const Shapes& inputs, const LayerSite&, ParameterStore&) override {
    if (shape_elements(inputs[0]) != shape_elements(target_))
      return invalid("target_shape: " + shape_text(target_) + " holds " +
                     std::to_string(shape_elements(target_)) + " values, the input " + shape_text(inputs[0]) +
                     " " + std::to_string(shape_elements(inputs[0])));
    input_ = inputs[0];
    return target_;
  }
  Status forward(LayerContext&, ParameterStore&, const Inputs& inputs, Activations& output) override {
    pass_through(inputs[0], output);
    output.shape = target_;
    return ok_status();
  }
  Status backward(LayerContext&, ParameterStore&, const Inputs&, const Activations&,
                  const Activations& output_gradient, const InputGradients& input_gradients) override {
    if (!input_gradients[0]) return ok_status();
    pass_through(output_gradient, *input_gradients[0]);
    input_gradients[0]->shape = input_;
    return ok_status();
  }
  std::string torch_code() const override {
    std::string dims;
    for (uint32_t d : target_) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    return "torch.nn.Unflatten(1, (" + dims + (target_.size() == 1 ? ",))" : "))");
  }

  bool passes_mask() const override { return false; }  // positions rearranged

 private:
  Shape target_, input_;
};

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

// Keras' gelu: x Phi(x) exactly (erf), or with `approximate` the tanh form
// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), as
// torch.nn.GELU(approximate='tanh').
class Gelu final : public Layer {
 public:
  explicit Gelu(bool approximate) : approximate_(approximate) {}
  Result<Shape> build(const Shapes& inputs, const LayerSite&, ParameterStore&) override { return inputs[0]; }
  // In training the forward pass keeps each derivative (in double, as
  // computed), so that the backward pass multiplies instead of calling
  // erf and exp again: the same values, so the same bits.
  Status forward(LayerContext& context, ParameterStore&, const Inputs& inputs, Activations& output) override {
    pass_through(inputs[0], output);
    if (!context.training) {
      for (float& value : output.values) value = float(gelu(value).first);
      return ok_status();
    }
    derivatives_.resize(output.values.size());
    for (std::size_t i = 0; i < output.values.size(); ++i) {
      const auto [value, derivative] = gelu(output.values[i]);
      output.values[i] = float(value);
      derivatives_[i] = derivative;
    }
    return ok_status();
  }
  Status backward(LayerContext&, ParameterStore&, const Inputs&, const Activations&,
                  const Activations& output_gradient, const InputGradients& input_gradients) override {
    Activations* dx = input_gradients[0];
    if (!dx) return ok_status();
    pass_through(output_gradient, *dx);
    if (derivatives_.size() != dx->values.size())
      return Status(StatusCode::kInternal, "gelu: backward without its training forward pass");
    for (std::size_t i = 0; i < dx->values.size(); ++i)
      dx->values[i] = float(double(dx->values[i]) * derivatives_[i]);
    return ok_status();
  }
  std::string torch_code() const override {
    return approximate_ ? "torch.nn.GELU(approximate='tanh')" : "torch.nn.GELU()";
  }

 private:
  // The value and the derivative at x.
  std::pair<double, double> gelu(double x) const {
    constexpr double kPi = 3.14159265358979323846;
    if (!approximate_) {
      const double cdf = 0.5 * (1.0 + std::erf(x / std::sqrt(2.0)));
      const double pdf = std::exp(-0.5 * x * x) / std::sqrt(2.0 * kPi);
      return {x * cdf, cdf + x * pdf};
    }
    const double c = std::sqrt(2.0 / kPi), inner = c * (x + 0.044715 * x * x * x);
    const double t = std::tanh(inner);
    return {0.5 * x * (1.0 + t),
            0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3.0 * 0.044715 * x * x)};
  }
  bool approximate_;
  std::vector<double> derivatives_;  // at the last training forward pass's inputs
};

// Keras' Softmax(axis=-1): each row of the last axis, its largest
// subtracted; dx = y (dy - sum(dy y)).
class Softmax final : public Layer {
 public:
  Result<Shape> build(const Shapes& inputs, const LayerSite&, ParameterStore&) override {
    width_ = inputs[0].back();
    return inputs[0];
  }
  Status forward(LayerContext&, ParameterStore&, const Inputs& inputs, Activations& output) override {
    pass_through(inputs[0], output);
    for (std::size_t r = 0; r < output.values.size() / width_; ++r) {
      float* z = output.values.data() + r * width_;
      const float top = *std::max_element(z, z + width_);
      double total = 0;
      for (uint32_t i = 0; i < width_; ++i) total += std::exp(double(z[i]) - top);
      for (uint32_t i = 0; i < width_; ++i) z[i] = float(std::exp(double(z[i]) - top) / total);
    }
    return ok_status();
  }
  Status backward(LayerContext&, ParameterStore&, const Inputs& inputs, const Activations& output,
                  const Activations& output_gradient, const InputGradients& input_gradients) override {
    Activations* dx = input_gradients[0];
    if (!dx) return ok_status();
    zeros_like(inputs[0], *dx);
    for (std::size_t r = 0; r < output.values.size() / width_; ++r) {
      const float* y = output.values.data() + r * width_;
      const float* dy = output_gradient.values.data() + r * width_;
      double dot = 0;
      for (uint32_t i = 0; i < width_; ++i) dot += double(dy[i]) * y[i];
      for (uint32_t i = 0; i < width_; ++i) dx->values[r * width_ + i] = float(double(y[i]) * (dy[i] - dot));
    }
    return ok_status();
  }
  std::string torch_code() const override { return "torch.nn.Softmax(dim=-1)"; }

 private:
  uint32_t width_ = 0;
};

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

Result<std::unique_ptr<Layer>> make_reshape(LayerArgs& args) {
  auto target = args.positive_list("target_shape");
  if (!target.ok()) return target.status();
  return std::unique_ptr<Layer>(new Reshape(*target));
}

Result<std::unique_ptr<Layer>> make_layer_normalization(LayerArgs& args) {
  auto epsilon = args.number("epsilon", 1e-3f, 0.0f, 1.0f);  // Keras' default; PyTorch's is 1e-5
  if (!epsilon.ok()) return epsilon.status();
  if (!(*epsilon > 0)) return invalid("epsilon: must be a positive number");
  return std::unique_ptr<Layer>(new LayerNormalization(*epsilon));
}

Result<std::unique_ptr<Layer>> make_gelu(LayerArgs& args) {
  auto approximate = args.boolean("approximate", false);
  if (!approximate.ok()) return approximate.status();
  return std::unique_ptr<Layer>(new Gelu(*approximate));
}

Result<std::unique_ptr<Layer>> make_softmax(LayerArgs&) { return std::unique_ptr<Layer>(new Softmax()); }

Result<std::unique_ptr<Layer>> make_position_embedding(LayerArgs& args) {
  if (!args.has("sequence_length"))
    return invalid("sequence_length: required (the positions the table holds)");
  auto length = args.positive("sequence_length", 1);
  if (!length.ok()) return length.status();
  return std::unique_ptr<Layer>(new PositionEmbedding(*length));
}

Result<std::unique_ptr<Layer>> make_global_average_pooling1d(LayerArgs&) {
  return std::unique_ptr<Layer>(new GlobalAveragePooling1D());
}

}  // namespace systole
