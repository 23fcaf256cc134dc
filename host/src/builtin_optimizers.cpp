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
// or with Nesterov w += momentum * velocity - lr * g.
class Sgd final : public Optimizer {
 public:
  explicit Sgd(const OptimizerConfig& config) : Optimizer(config) { add_slot("velocity"); }

 protected:
  void update(const Tensor& tensor, float lr) override {
    const float momentum = config().momentum;
    float* velocity = tensor.slots[0];
    for (std::size_t i = 0; i < tensor.size; ++i) {
      const float g = tensor.gradient[i];
      velocity[i] = momentum * velocity[i] - lr * g;
      tensor.values[i] += config().nesterov ? momentum * velocity[i] - lr * g : velocity[i];
    }
  }
};

// Adam: m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2,
// w -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + epsilon). AdamW is
// the same with a decoupled weight decay of 0.004 by default (Keras').
class Adam final : public Optimizer {
 public:
  Adam(const OptimizerConfig& config, float default_decay)
      : Optimizer(config), default_decay_(default_decay) {
    add_slot("m");
    add_slot("v");
  }

 protected:
  float default_weight_decay() const override { return default_decay_; }
  void update(const Tensor& tensor, float lr) override {
    const float b1 = config().beta1, b2 = config().beta2, epsilon = config().epsilon;
    const double t = double(steps());
    const float correction1 = float(1.0 - std::pow(double(b1), t));
    const float correction2 = float(1.0 - std::pow(double(b2), t));
    float* m = tensor.slots[0];
    float* v = tensor.slots[1];
    for (std::size_t i = 0; i < tensor.size; ++i) {
      const float g = tensor.gradient[i];
      m[i] = b1 * m[i] + (1.0f - b1) * g;
      v[i] = b2 * v[i] + (1.0f - b2) * g * g;
      const float m_hat = m[i] / correction1;
      const float v_hat = v[i] / correction2;
      tensor.values[i] -= lr * m_hat / (std::sqrt(v_hat) + epsilon);
    }
  }

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
