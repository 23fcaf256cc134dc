// SPDX-License-Identifier: Apache-2.0
// SGD (momentum, Nesterov), Adam, AdamW and Adagrad as Keras defines them,
// and LARS as You, Gitman and Ginsburg (2017) and TensorFlow's reference
// implementation define it. Every loop runs in index order in fp32.
#include "builtin_optimizers.h"

#include <cmath>

namespace systole {
namespace {

Status invalid(const std::string& message) { return Status(StatusCode::kInvalidArgument, message); }

Status check_momentum(const OptimizerConfig& config) {
  if (!(config.momentum >= 0 && config.momentum < 1))
    return invalid("momentum must be in [0, 1), got " + std::to_string(config.momentum));
  return ok_status();
}

// Keras' SGD: velocity = momentum * velocity - lr * g; then w += velocity,
// or with Nesterov w += momentum * velocity - lr * g: the vector engine's
// sgd.
class Sgd final : public Optimizer {
 public:
  explicit Sgd(const OptimizerConfig& config) : Optimizer(config) { add_slot("velocity"); }

  std::optional<VectorUpdate> vector_update(float lr) const override {
    spec::VectorScalars scalars;
    scalars.alpha = lr;
    scalars.beta = config().momentum;
    scalars.nesterov = config().nesterov;
    return VectorUpdate{spec::Opcode::kSgd, scalars};
  }

 protected:
  void update(const Tensor& tensor, float lr) override { run_vector_update(tensor, *vector_update(lr)); }
};

// Adam as Keras computes it, with both bias corrections in the step size:
// alpha = lr * sqrt(1 - b2^t) / (1 - b1^t) (in double, rounded once),
// m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2,
// w -= alpha * m / (sqrt(v) + epsilon): the vector engine's adam. AdamW
// is the same with a decoupled weight decay of 0.004 by default (Keras').
class Adam final : public Optimizer {
 public:
  Adam(const OptimizerConfig& config, float default_decay)
      : Optimizer(config), default_decay_(default_decay) {
    add_slot("m");
    add_slot("v");
  }

  std::optional<VectorUpdate> vector_update(float lr) const override {
    const double t = double(steps());
    spec::VectorScalars scalars;
    scalars.alpha = float(double(lr) * std::sqrt(1.0 - std::pow(double(config().beta2), t)) /
                          (1.0 - std::pow(double(config().beta1), t)));
    scalars.beta = config().beta1;
    scalars.gamma = config().beta2;
    scalars.delta = config().epsilon;
    return VectorUpdate{spec::Opcode::kAdam, scalars};
  }

 protected:
  float default_weight_decay() const override { return default_decay_; }
  void update(const Tensor& tensor, float lr) override { run_vector_update(tensor, *vector_update(lr)); }

 private:
  float default_decay_;
};

// Adagrad in tf.keras' form, as the tables use it: accumulator += g^2,
// w -= lr * g / (sqrt(accumulator) + epsilon).
class Adagrad final : public Optimizer {
 public:
  explicit Adagrad(const OptimizerConfig& config) : Optimizer(config) {
    add_slot("sum", config.initial_accumulator);
  }

 protected:
  void update(const Tensor& tensor, float lr) override {
    const float epsilon = config().epsilon;
    float* sum = tensor.slots[0];
    for (std::size_t i = 0; i < tensor.size; ++i) {
      const float g = tensor.gradient[i];
      sum[i] += g * g;
      tensor.values[i] -= lr * g / (std::sqrt(sum[i]) + epsilon);
    }
  }
};

// LARS, layer by layer (each tensor is a layer): with decay d and trust
// coefficient eta,
//   trust = eta * |w| / (|g| + d |w|)   (1 when |w| or |g| is 0),
//   velocity = momentum * velocity + lr * trust * (g + d w),
//   w -= velocity, or with Nesterov w -= momentum * velocity + lr * trust * (g + d w).
// The norms are summed in double in index order.
class Lars final : public Optimizer {
 public:
  explicit Lars(const OptimizerConfig& config) : Optimizer(config) { add_slot("velocity"); }

 protected:
  bool decoupled_weight_decay() const override { return false; }
  float default_weight_decay() const override { return 1e-4f; }
  void update(const Tensor& tensor, float lr) override {
    const float decay = weight_decay(), momentum = config().momentum;
    double w_sum = 0, g_sum = 0;
    for (std::size_t i = 0; i < tensor.size; ++i) {
      w_sum += double(tensor.values[i]) * double(tensor.values[i]);
      g_sum += double(tensor.gradient[i]) * double(tensor.gradient[i]);
    }
    const double w_norm = std::sqrt(w_sum), g_norm = std::sqrt(g_sum);
    const double trust = w_norm > 0 && g_norm > 0
                             ? double(config().trust_coefficient) * w_norm / (g_norm + double(decay) * w_norm)
                             : 1.0;
    const float scaled_lr = float(double(lr) * trust);
    float* velocity = tensor.slots[0];
    for (std::size_t i = 0; i < tensor.size; ++i) {
      const float step = scaled_lr * (tensor.gradient[i] + decay * tensor.values[i]);
      velocity[i] = momentum * velocity[i] + step;
      tensor.values[i] -= config().nesterov ? momentum * velocity[i] + step : velocity[i];
    }
  }
};

Status check_betas(const OptimizerConfig& config) {
  for (auto [name, value] : {std::pair<const char*, float>{"beta1", config.beta1}, {"beta2", config.beta2}})
    if (!(value >= 0 && value < 1))
      return invalid(std::string(name) + " must be in [0, 1), got " + std::to_string(value));
  return ok_status();
}

using Made = Result<std::unique_ptr<Optimizer>>;

}  // namespace

std::vector<std::pair<std::string, OptimizerFactory>> builtin_optimizers() {
  return {
      {"sgd",
       [](const OptimizerConfig& config) -> Made {
         SYSTOLE_RETURN_IF_ERROR(check_momentum(config));
         return std::unique_ptr<Optimizer>(new Sgd(config));
       }},
      {"adam",
       [](const OptimizerConfig& config) -> Made {
         SYSTOLE_RETURN_IF_ERROR(check_betas(config));
         return std::unique_ptr<Optimizer>(new Adam(config, 0.0f));
       }},
      {"adamw",
       [](const OptimizerConfig& config) -> Made {
         SYSTOLE_RETURN_IF_ERROR(check_betas(config));
         return std::unique_ptr<Optimizer>(new Adam(config, 0.004f));
       }},
      {"adagrad",
       [](const OptimizerConfig& config) -> Made {
         if (!(config.initial_accumulator >= 0) || !std::isfinite(config.initial_accumulator))
           return invalid("initial_accumulator must be a number >= 0");
         return std::unique_ptr<Optimizer>(new Adagrad(config));
       }},
      {"lars",
       [](const OptimizerConfig& config) -> Made {
         SYSTOLE_RETURN_IF_ERROR(check_momentum(config));
         if (!(config.trust_coefficient > 0) || !std::isfinite(config.trust_coefficient))
           return invalid("trust_coefficient must be a positive number");
         return std::unique_ptr<Optimizer>(new Lars(config));
       }},
  };
}

}  // namespace systole
