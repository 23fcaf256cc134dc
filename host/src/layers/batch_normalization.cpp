// SPDX-License-Identifier: Apache-2.0
// BatchNormalization over the last axis (features of a flat input, channels
// of an image), on the host. In training it normalises with the batch's
// mean and (biased) variance, as Keras does:
//   - per replica (the default, like a plain BatchNormalization under
//     TPUStrategy): each replica normalises with its own examples' moments;
//   - `sync: true` (SyncBatchNormalization): the moments of the global
//     batch, all-reduced across replicas; the backward pass all-reduces its
//     two sums the same way.
// The moving statistics are updated with the replicas' mean of the batch
// moments (TensorFlow reads such variables as the mean over replicas), so
// every replica holds the same bits. Evaluation uses the moving
// statistics. Tensors carry torch.nn.BatchNorm's names.
#include <cmath>
#include <cstdio>

#include "layer_kit.h"

namespace systole {
namespace {

class BatchNormalization final : public Layer {
 public:
  BatchNormalization(float momentum, float epsilon, bool sync)
      : momentum_(momentum), epsilon_(epsilon), sync_(sync) {}

  Result<Shape> build(const Shapes& inputs, const LayerSite& site, ParameterStore& store) override {
    const Shape& input = inputs[0];
    if (input.size() != 1 && input.size() != 3)
      return Status(
          StatusCode::kInvalidArgument,
          "batch_normalization expects a flat input or height x width x channels, got " + shape_text(input));
    channels_ = input.back();
    spatial_ = uint32_t(shape_elements(input) / channels_);
    image_ = input.size() == 3;
    const std::string prefix = site.module();
    gamma_ = store.declare(prefix + ".weight", {channels_}, Region::kTrainable);
    beta_ = store.declare(prefix + ".bias", {channels_}, Region::kTrainable);
    moving_mean_ = store.declare(prefix + ".running_mean", {channels_}, Region::kBuffer);
    moving_var_ = store.declare(prefix + ".running_var", {channels_}, Region::kBuffer);
    batches_ = store.declare(prefix + ".num_batches_tracked", {}, Region::kBuffer, /*integer=*/true);
    return input;
  }

  void initialize(ParameterStore& store, std::mt19937_64&) const override {
    std::fill_n(store.values(gamma_), channels_, 1.0f);
    std::fill_n(store.values(moving_var_), channels_, 1.0f);
  }

  Status forward(LayerContext& context, ParameterStore& store, const Inputs& inputs,
                 Activations& output) override {
    const Activations& input = inputs[0];
    pass_through(input, output);
    const std::size_t rows = std::size_t(input.batch) * spatial_;
    const float* gamma = store.values(gamma_);
    const float* beta = store.values(beta_);
    std::vector<float> mean(channels_), variance(channels_);
    if (!context.training) {
      for (uint32_t c = 0; c < channels_; ++c) {
        mean[c] = store.values(moving_mean_)[c];
        variance[c] = store.values(moving_var_)[c];
      }
    } else {
      SYSTOLE_RETURN_IF_ERROR(moments(context, input.values, rows, mean, variance));
      SYSTOLE_RETURN_IF_ERROR(update_moving(context, store, mean, variance));
    }
    inverse_std_.resize(channels_);
    for (uint32_t c = 0; c < channels_; ++c) inverse_std_[c] = 1.0f / std::sqrt(variance[c] + epsilon_);
    if (context.training) normalized_.resize(input.values.size());
    for (std::size_t r = 0; r < rows; ++r)
      for (uint32_t c = 0; c < channels_; ++c) {
        const std::size_t i = r * channels_ + c;
        const float x_hat = (input.values[i] - mean[c]) * inverse_std_[c];
        if (context.training) normalized_[i] = x_hat;
        output.values[i] = gamma[c] * x_hat + beta[c];
      }
    return ok_status();
  }

  Status backward(LayerContext& context, ParameterStore& store, const Inputs& inputs, const Activations&,
                  const Activations& output_gradient, const InputGradients& input_gradients) override {
    const Activations& input = inputs[0];
    Activations* input_gradient = input_gradients[0];
    const std::size_t rows = std::size_t(input.batch) * spatial_;
    const std::vector<float>& dy = output_gradient.values;
    std::vector<double> sum_dy(channels_, 0.0), sum_dy_x_hat(channels_, 0.0);
    for (std::size_t r = 0; r < rows; ++r)
      for (uint32_t c = 0; c < channels_; ++c) {
        const std::size_t i = r * channels_ + c;
        sum_dy[c] += dy[i];
        sum_dy_x_hat[c] += double(dy[i]) * normalized_[i];
      }
    // This replica's share of dgamma and dbeta; the all-reduce of the
    // gradients adds the others'.
    std::vector<float> sums(2 * std::size_t(channels_) + 1);
    for (uint32_t c = 0; c < channels_; ++c) {
      store.gradient(gamma_)[c] = float(sum_dy_x_hat[c]);
      store.gradient(beta_)[c] = float(sum_dy[c]);
      sums[c] = float(sum_dy[c]);
      sums[channels_ + c] = float(sum_dy_x_hat[c]);
    }
    sums.back() = float(rows);
    if (!input_gradient) return ok_status();
    if (sync_ && context.all_reduce_sum) SYSTOLE_RETURN_IF_ERROR(context.all_reduce_sum(sums));
    const float count = sums.back();
    zeros_like(input, *input_gradient);
    const float* gamma = store.values(gamma_);
    for (std::size_t r = 0; r < rows; ++r)
      for (uint32_t c = 0; c < channels_; ++c) {
        const std::size_t i = r * channels_ + c;
        input_gradient->values[i] = gamma[c] * inverse_std_[c] *
                                    (dy[i] - sums[c] / count - normalized_[i] * sums[channels_ + c] / count);
      }
    return ok_status();
  }

  std::string torch_code() const override {
    char text[128];
    std::snprintf(text, sizeof text, "torch.nn.BatchNorm%dd(%u, eps=%.4g, momentum=%.4g)", image_ ? 2 : 1,
                  channels_, double(epsilon_), 1.0 - double(momentum_));
    return text;
  }

 private:
  // The batch's mean and biased variance per channel: this replica's, or
  // the global batch's when synchronised (sums all-reduced, then the
  // squared deviations from the global mean).
  Status moments(LayerContext& context, const std::vector<float>& x, std::size_t rows,
                 std::vector<float>& mean, std::vector<float>& variance) const {
    const bool across = sync_ && context.all_reduce_sum;
    std::vector<double> sum(channels_, 0.0);
    for (std::size_t r = 0; r < rows; ++r)
      for (uint32_t c = 0; c < channels_; ++c) sum[c] += x[r * channels_ + c];
    std::vector<float> totals(channels_ + 1);
    for (uint32_t c = 0; c < channels_; ++c) totals[c] = float(sum[c]);
    totals.back() = float(rows);
    if (across) SYSTOLE_RETURN_IF_ERROR(context.all_reduce_sum(totals));
    const double count = totals.back();
    for (uint32_t c = 0; c < channels_; ++c)
      mean[c] = across ? float(totals[c] / count) : float(sum[c] / count);
    std::vector<double> squares(channels_, 0.0);
    for (std::size_t r = 0; r < rows; ++r)
      for (uint32_t c = 0; c < channels_; ++c) {
        const double d = double(x[r * channels_ + c]) - mean[c];
        squares[c] += d * d;
      }
    std::vector<float> deviations(squares.begin(), squares.end());
    if (across) SYSTOLE_RETURN_IF_ERROR(context.all_reduce_sum(deviations));
    for (uint32_t c = 0; c < channels_; ++c)
      variance[c] = across ? float(deviations[c] / count) : float(squares[c] / count);
    return ok_status();
  }

  Status update_moving(LayerContext& context, ParameterStore& store, const std::vector<float>& mean,
                       const std::vector<float>& variance) const {
    std::vector<float> moments(mean);
    moments.insert(moments.end(), variance.begin(), variance.end());
    float replicas = 1.0f;
    if (!sync_ && context.all_reduce_sum && context.replicas > 1) {
      SYSTOLE_RETURN_IF_ERROR(context.all_reduce_sum(moments));
      replicas = float(context.replicas);
    }
    float* moving_mean = store.values(moving_mean_);
    float* moving_var = store.values(moving_var_);
    for (uint32_t c = 0; c < channels_; ++c) {
      moving_mean[c] = moving_mean[c] * momentum_ + moments[c] / replicas * (1.0f - momentum_);
      moving_var[c] = moving_var[c] * momentum_ + moments[channels_ + c] / replicas * (1.0f - momentum_);
    }
    store.values(batches_)[0] += 1.0f;
    return ok_status();
  }

  float momentum_, epsilon_;
  bool sync_;
  uint32_t channels_ = 0, spatial_ = 0;
  bool image_ = false;
  std::size_t gamma_ = 0, beta_ = 0, moving_mean_ = 0, moving_var_ = 0, batches_ = 0;
  std::vector<float> normalized_, inverse_std_;
};

}  // namespace

Result<std::unique_ptr<Layer>> make_batch_normalization(LayerArgs& args) {
  auto momentum = args.number("momentum", 0.99f, 0.0f, 1.0f);
  if (!momentum.ok()) return momentum.status();
  auto epsilon = args.number("epsilon", 1e-3f, 1e-12f, 1.0f, true);
  if (!epsilon.ok()) return epsilon.status();
  auto sync = args.boolean("sync", false);
  if (!sync.ok()) return sync.status();
  return std::unique_ptr<Layer>(new BatchNormalization(*momentum, *epsilon, *sync));
}

}  // namespace systole
