// SPDX-License-Identifier: Apache-2.0
// A Sequential model: a list of layers (as a Keras user writes
// tf.keras.Sequential), its parameter store, and softmax cross-entropy on
// top of the last layer's logits.
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
  Shape input_shape;  // one example
  uint32_t classes = 0;
  std::vector<LayerConfig> layers;

  // The spec as JSON (checkpoint metadata) and back.
  std::string to_json() const;
  static Result<ModelSpec> from_json(const std::string& text);
};

// Dense layers of the given widths with fused ReLUs, then the logits: the
// `model.hidden` shorthand (784-256-128-10 is hidden [256, 128]).
ModelSpec dense_stack(uint32_t inputs, const std::vector<uint32_t>& hidden, uint32_t classes);

struct StepResult {
  double loss_sum = 0;   // sum of the examples' cross-entropy losses
  uint32_t correct = 0;  // examples whose arg-max logit is the label
  uint32_t examples = 0;
};

// Loss and accuracy of `logits` (batch x classes); with `gradient`, also
// d(loss sum / divisor)/d(logits).
StepResult softmax_cross_entropy(const Activations& logits, const uint8_t* labels, float divisor,
                                 std::vector<float>* gradient);

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
