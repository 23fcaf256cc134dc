// SPDX-License-Identifier: Apache-2.0
// A Sequential model: a list of layers (as a Keras user writes
// tf.keras.Sequential) and its parameter store. The loss on its output is
// the trainer's (systole/loss.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "systole/layer.h"
#include "systole/status.h"

namespace systole {

struct ModelSpec {
  Shape input_shape;     // one example
  uint32_t classes = 0;  // the width of the last layer's output
  std::vector<LayerConfig> layers;

  // The spec as JSON (checkpoint metadata) and back.
  std::string to_json() const;
  static Result<ModelSpec> from_json(const std::string& text);
};

// Dense layers of the given widths with fused ReLUs, then the logits: the
// `model.hidden` shorthand (784-256-128-10 is hidden [256, 128]).
ModelSpec dense_stack(uint32_t inputs, const std::vector<uint32_t>& hidden, uint32_t classes);

// What a step or an evaluation adds up: the examples' losses and the
// metrics' sums (Metric::update), which add over batches and replicas.
struct StepResult {
  double loss_sum = 0;  // the sum of the examples' losses
  uint32_t examples = 0;
  std::vector<double> metric_sums;  // each metric's sums in turn

  StepResult& operator+=(const StepResult& other);
};

class Sequential {
 public:
  // Builds the layers in order; errors name the layer
  // ("model.layers[2].kernel_size: ..."). Parameters are drawn from `seed`.
  static Result<std::unique_ptr<Sequential>> build(const ModelSpec& spec, uint64_t seed);

  const ModelSpec& spec() const { return spec_; }
  ParameterStore& parameters() { return store_; }
  const ParameterStore& parameters() const { return store_; }

  // `batch` examples (input_shape each, row-major) through the first
  // `layers` layers (all by default); in training the activations are kept
  // for backward().
  Status forward(LayerContext& context, const float* inputs, uint32_t batch, std::size_t layers = SIZE_MAX);
  const Activations& logits() const { return activations_.back(); }
  // The output of the first `layers` layers after forward().
  const Activations& output(std::size_t layers) const {
    return activations_[std::min(layers, layers_.size())];
  }
  std::size_t layer_count() const { return layers_.size(); }
  // From dL/d(logits): every trainable tensor's gradient in the store.
  Status backward(LayerContext& context, const std::vector<float>& logits_gradient);

  // One line per layer: its type, output shape, parameters and the
  // equivalent torch.nn modules.
  std::string summary() const;
  // The model as torch.nn.Sequential code whose state_dict() has the
  // store's names and shapes.
  std::string torch_code() const;

 private:
  Sequential() = default;
  ModelSpec spec_;
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<Shape> shapes_;  // after each layer
  ParameterStore store_;
  std::vector<Activations> activations_;  // input, then each layer's output
  Activations gradient_, next_gradient_;
};

}  // namespace systole
