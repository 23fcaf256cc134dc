// SPDX-License-Identifier: Apache-2.0
// A model: a graph of layers (Keras' functional API; a plain list is
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

// A model: a graph of layers, as Keras' functional API builds one. A layer
// names its inputs in its config (`inputs: [block1, input]`, "input" being
// the model's input) and may be named (`name: block1`); a layer without
// `inputs` takes the previous layer's output, so a list without any is
// tf.keras.Sequential and means what it always meant. The last layer's
// output is the model's (its logits).
//
// The graph is checked when it is built: an unknown, repeated or unused
// name, a cycle, a layer given the wrong number of inputs or inputs of
// shapes it cannot take is an error naming the layer and the field. Layers
// run in a topological order (the config's where it is one); in backward,
// the gradients flowing into a tensor several layers use are added in
// the reverse of that order, the same every step.
//
// Tensors are named as the equivalent PyTorch module's state_dict() names
// them: by position in a torch.nn.Sequential for a list ("3.weight"), by
// the layer's name in a graph ("block1.weight"; an unnamed layer of a graph
// is called by its type, then type_1, type_2, ... as Keras does).
class Model {
 public:
  // Builds the layers; errors name the layer ("model.layers[2].kernel_size:
  // ..."). Parameters are drawn from `seed`.
  static Result<std::unique_ptr<Model>> build(const ModelSpec& spec, uint64_t seed);

  const ModelSpec& spec() const { return spec_; }
  ParameterStore& parameters() { return store_; }
  const ParameterStore& parameters() const { return store_; }
  // Whether the config wrote a graph (some layer names its inputs).
  bool graph() const { return graph_; }

  // `batch` examples (input_shape each, row-major) through the layers of
  // the config's first `layers` (all by default); in training the
  // activations are kept for backward().
  Status forward(LayerContext& context, const float* inputs, uint32_t batch, std::size_t layers = SIZE_MAX);
  const Activations& logits() const { return tensors_.back(); }
  // One example's logits: [classes], or [positions, classes].
  const Shape& logits_shape() const { return nodes_.back().shape; }
  // The output of the config's layer `layers - 1` (the model's input for
  // 0) after forward().
  const Activations& output(std::size_t layers) const { return tensors_[std::min(layers, nodes_.size())]; }
  std::size_t layer_count() const { return nodes_.size(); }
  // From dL/d(logits): every trainable tensor's gradient in the store.
  Status backward(LayerContext& context, const std::vector<float>& logits_gradient);

  // One line per layer: its name (in a graph) and type, output shape,
  // parameters and inputs (in a graph).
  std::string summary() const;
  // A list as torch.nn.Sequential code whose state_dict() has the store's
  // names and shapes; a graph as one line per layer with its modules.
  std::string torch_code() const;

 private:
  // One layer of the graph. Tensor 0 is the model's input, tensor i + 1
  // the output of the config's layer i.
  struct Node {
    std::unique_ptr<Layer> layer;
    std::string name, type;
    std::vector<uint32_t> inputs;              // tensors
    Shape shape;                               // of its output
    std::size_t first_entry = 0, entries = 0;  // its tensors in the store
    std::vector<Activations> scratch;          // input gradients added in after the first
  };
  Model() = default;
  static void carry_mask(const std::vector<const Activations*>& inputs, Activations& output);
  ModelSpec spec_;
  bool graph_ = false;
  std::vector<Node> nodes_;
  std::vector<uint32_t> order_;  // nodes in the order they run
  ParameterStore store_;
  std::vector<Activations> tensors_;    // the input, then each layer's output
  std::vector<Activations> gradients_;  // dL/d(tensor)
  std::vector<bool> reached_;           // tensors with a gradient in this pass
  // Per tensor: the one layer that reads it when the card may keep it
  // (Layer::output_on_card, input_on_card), else kNoReader.
  static constexpr uint32_t kNoReader = UINT32_MAX;
  std::vector<uint32_t> card_reader_;
};

}  // namespace systole
