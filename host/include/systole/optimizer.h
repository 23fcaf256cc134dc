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

struct OptimizerConfig {
  std::string name = "adam";  // "adam" or "sgd"
  float learning_rate = 1e-3f;
  float momentum = 0.9f;      // sgd
  float beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-7f;  // adam (Keras' values)
  // Keras' CosineDecay when > 0: step t (counted from 0) uses
  // learning_rate * 0.5 * (1 + cos(pi * min(t, decay_steps) / decay_steps)).
  uint64_t decay_steps = 0;
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
