// SPDX-License-Identifier: Apache-2.0
// The optimizers that update a model's fp32 master parameters, with their
// state for checkpoints: Keras' SGD with momentum or Adam for the dense
// tensors, and Adagrad for embedding tables, applied to the rows a step
// touched only (as TPU embeddings are trained: a row no example used keeps
// its values and its accumulator, which is also what dense Adagrad would
// do with its zero gradient).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "systole/parameters.h"
#include "systole/status.h"

namespace systole {

// The learning rate of step t (counted from 0) for a base rate lr, as
// Keras' schedules define it, after an optional linear warmup:
//   t < warmup_steps: lr * (t + 1) / warmup_steps; later steps follow the
//   schedule at u = t - warmup_steps:
//   constant     lr
//   cosine       CosineDecay(alpha=0): lr * 0.5 * (1 + cos(pi * min(u, D) / D))
//   exponential  ExponentialDecay: lr * decay_rate^(u / D)
//   step         ExponentialDecay(staircase=True), PyTorch's StepLR:
//                lr * decay_rate^floor(u / D)
// with D = decay_steps.
struct LearningRateSchedule {
  enum class Kind { kConstant, kCosine, kExponential, kStep };
  Kind kind = Kind::kConstant;
  uint64_t decay_steps = 0;
  double decay_rate = 0.1;
  uint64_t warmup_steps = 0;

  double rate(double lr, uint64_t t) const;
  // "constant", "cosine", "exponential", "step".
  static Result<Kind> parse(const std::string& name);
  static const char* name(Kind kind);
};

struct OptimizerConfig {
  std::string name = "adam";  // "adam" or "sgd"
  float learning_rate = 1e-3f;
  float momentum = 0.9f;                                // sgd
  float beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-7f;  // adam (Keras' values)
  LearningRateSchedule schedule;
  // Embedding tables (Keras' Adagrad: accumulator += g^2,
  // w -= lr * g / (sqrt(accumulator) + epsilon)); the rate is constant.
  float table_learning_rate = 0.05f;
  float table_initial_accumulator = 0.1f;
};

// One slot of optimizer state: its name, the region of the store it
// parallels (one value per value of that region) and the values.
struct OptimizerSlot {
  std::string name;
  Region region;
  const std::vector<float>* values;
};

// Optimizer state over the flattened parameters.
class Optimizer {
 public:
  // For `parameters` dense values and `table_values` table values.
  Optimizer(const OptimizerConfig& config, std::size_t parameters, std::size_t table_values = 0);
  static Status validate(const OptimizerConfig& config);

  // parameters -= update(gradients), in place, in a fixed order; both hold
  // as many values as the optimizer was made for.
  void apply(std::vector<float>& parameters, const std::vector<float>& gradients);
  // Adagrad on the rows of every table's sparse gradient, in row order.
  void apply_sparse(ParameterStore& store);

  uint64_t steps() const { return steps_; }
  // The learning rate of the next step.
  float learning_rate() const;
  // State for checkpoints, and restoring it slot by slot.
  std::vector<OptimizerSlot> state() const;
  Status restore(const std::string& name, const std::vector<float>& values, uint64_t steps);

 private:
  OptimizerConfig config_;
  uint64_t steps_ = 0;
  std::vector<float> first_, second_;  // momentum / Adam moments
  std::vector<float> accumulator_;     // Adagrad, over the tables
};

}  // namespace systole
