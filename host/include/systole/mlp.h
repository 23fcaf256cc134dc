// A multilayer perceptron (dense layers, ReLU between them, softmax
// cross-entropy on top) with fp32 master parameters, and the optimizers
// that update them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "systole/status.h"

namespace systole {

struct MlpShape {
  uint32_t inputs = 784;
  std::vector<uint32_t> hidden = {256, 128};
  uint32_t outputs = 10;

  // Layer l maps widths()[l] features to widths()[l + 1].
  std::vector<uint32_t> widths() const;
  uint32_t layers() const { return uint32_t(hidden.size()) + 1; }
};

// fp32 master parameters, flattened layer by layer: weights[0] (in x out,
// row-major: the layout the array multiplies with), biases[0] (out),
// weights[1], biases[1], ... Glorot-uniform weights and zero biases (Keras'
// Dense defaults).
std::vector<float> init_parameters(const MlpShape& shape, uint64_t seed);

struct OptimizerConfig {
  std::string name = "adam";  // "adam" or "sgd"
  float learning_rate = 1e-3f;
  float momentum = 0.9f;      // sgd
  float beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-7f;  // adam (Keras' values)
};

// Optimizer state over the flattened parameters.
class Optimizer {
 public:
  Optimizer(const OptimizerConfig& config, std::size_t parameters);
  static Status validate(const OptimizerConfig& config);

  // parameters -= update(gradients), in place, in a fixed order.
  void apply(std::vector<float>& parameters, const std::vector<float>& gradients);

  uint64_t steps() const { return steps_; }
  // State for checkpoints: (name, values) pairs, and restoring them.
  std::vector<std::pair<std::string, const std::vector<float>*>> state() const;
  Status restore(const std::string& name, const std::vector<float>& values, uint64_t steps);

 private:
  OptimizerConfig config_;
  uint64_t steps_ = 0;
  std::vector<float> first_, second_;  // momentum / Adam moments
};

}  // namespace systole
