// The optimizers that update a model's fp32 master parameters (Keras'
// SGD with momentum and Adam), with their state for checkpoints.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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
};

// Optimizer state over the flattened parameters.
class Optimizer {
 public:
  Optimizer(const OptimizerConfig& config, std::size_t parameters);
  static Status validate(const OptimizerConfig& config);

  // parameters -= update(gradients), in place, in a fixed order; both hold
  // as many values as the optimizer was made for.
  void apply(std::vector<float>& parameters, const std::vector<float>& gradients);

  uint64_t steps() const { return steps_; }
  // The learning rate of the next step.
  float learning_rate() const;
  // State for checkpoints: (name, values) pairs, and restoring them.
  std::vector<std::pair<std::string, const std::vector<float>*>> state() const;
  Status restore(const std::string& name, const std::vector<float>& values, uint64_t steps);

 private:
  OptimizerConfig config_;
  uint64_t steps_ = 0;
  std::vector<float> first_, second_;  // momentum / Adam moments
};

}  // namespace systole
