// SPDX-License-Identifier: Apache-2.0
// The layer interface. A layer owns named tensors in the model's
// ParameterStore and computes its forward and backward passes; every matrix
// product goes through a MatmulExecutor (the array), and most elementwise
// work stays on the host. Activations are fp32, batch-major, images as
// height x width x channels (NHWC), on the host unless the model keeps them
// on the card (Activations::on_card).
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "systole/matmul.h"
#include "systole/parameters.h"
#include "systole/status.h"

namespace systole {

// The shape of one example: {features}, or {height, width, channels}.
using Shape = std::vector<uint32_t>;
std::string shape_text(const Shape& shape);  // "[28, 28, 1]"
uint64_t shape_elements(const Shape& shape);

struct Activations {
  uint32_t batch = 0;
  Shape shape;
  std::vector<float> values;  // batch x shape_elements(shape)
  // Keras' padding mask over a sequence: per example and position (the
  // first dimension of `shape`), 1 where the position holds a token and 0
  // where it is padding; empty when every position counts. An embedding
  // with mask_zero makes one from the ids that are 0; the model carries it
  // forward through the layers that keep the positions, and attention and
  // pooling leave the padding out.
  std::vector<uint8_t> mask;
  // The values live in the card's memory (an executor that
  // keeps_activations(), and a tensor only products read): `card` holds
  // them and `values` is empty. The model sets on_card, for a tensor and
  // its gradient alike; the layer that writes the tensor gives it its card
  // tensor (place_values) or a view of another (Flatten).
  bool on_card = false;
  DeviceTensor card;

  std::size_t elements() const { return std::size_t(batch) * shape_elements(shape); }
  // The values as operations read and write them: the card tensor when
  // the card holds them, else the host's.
  Operand operand() const { return on_card ? Operand(card) : Operand(values.data()); }
  Destination destination() { return on_card ? Destination(card) : Destination(values.data()); }
};

// The input shapes of a layer, in the order its config names its inputs.
using Shapes = std::vector<Shape>;

// The input tensors of a pass, in the order of build()'s shapes (one for
// most layers; a graph model gives a layer several).
class Inputs {
 public:
  Inputs(std::initializer_list<const Activations*> tensors) : tensors_(tensors) {}
  explicit Inputs(std::vector<const Activations*> tensors) : tensors_(std::move(tensors)) {}
  std::size_t size() const { return tensors_.size(); }
  const Activations& operator[](std::size_t i) const { return *tensors_[i]; }

 private:
  std::vector<const Activations*> tensors_;
};

// Where backward() puts dL/d(input i); null for an input that needs none
// (the model's own input).
class InputGradients {
 public:
  InputGradients(std::initializer_list<Activations*> tensors) : tensors_(tensors) {}
  explicit InputGradients(std::vector<Activations*> tensors) : tensors_(std::move(tensors)) {}
  std::size_t size() const { return tensors_.size(); }
  Activations* operator[](std::size_t i) const { return tensors_[i]; }

 private:
  std::vector<Activations*> tensors_;
};

// What a pass needs besides its tensors.
struct LayerContext {
  MatmulExecutor* matmul = nullptr;
  bool training = false;
  uint64_t seed = 0;      // the run's seed
  uint64_t step = 0;      // optimizer steps taken (dropout masks)
  uint32_t replica = 0;   // global index of this replica
  uint32_t replicas = 1;  // num_replicas_in_sync
  // In training: the sum over every replica of the job, in place, in a
  // fixed order (identical bits on all). Every replica calls it the same
  // number of times in the same order.
  std::function<Status(std::vector<float>&)> all_reduce_sum;
};

// One layer as written in a config: its type and fields, each field's
// value as text ("3", "[3, 3]", "same").
struct LayerConfig {
  std::string type;
  std::vector<std::pair<std::string, std::string>> fields;
};

// A layer's fields, read with checks. Errors name the field
// ("kernel_size: expected a positive integer or a pair"); the model adds
// where the layer is.
class LayerArgs {
 public:
  explicit LayerArgs(const LayerConfig& config) : config_(config), used_(config.fields.size()) {}
  Result<uint32_t> positive(const std::string& key, uint32_t fallback);
  // One positive integer or a list of them ("3", "[3, 4]"); required.
  Result<std::vector<uint32_t>> positive_list(const std::string& key);
  // An integer or a pair: "3" is (3, 3), "[3, 2]" or "3,2" is (3, 2).
  Result<std::pair<uint32_t, uint32_t>> pair(const std::string& key, std::pair<uint32_t, uint32_t> fallback);
  // A number in [low, high) (or [low, high] when `high_inclusive`).
  Result<float> number(const std::string& key, float fallback, float low, float high,
                       bool high_inclusive = false);
  Result<std::string> choice(const std::string& key, const std::vector<std::string>& options,
                             const std::string& fallback);
  Result<bool> boolean(const std::string& key, bool fallback);
  // Whether the key is present at all (required fields).
  bool has(const std::string& key) const;
  // An error naming the first field no reader asked for.
  Status unknown_fields() const;

 private:
  const std::string* find(const std::string& key);
  const LayerConfig& config_;
  std::vector<bool> used_;
};

// Where a layer sits in the model.
struct LayerSite {
  uint32_t index = 0;        // in the config's list
  uint32_t torch_index = 0;  // first module of the equivalent torch.nn.Sequential
  std::string name;          // in a graph model: the layer's name

  // The state_dict prefix of the layer's module `offset` (of its
  // torch_modules()): "3" in a list, the layer's name in a graph (whose
  // reference module calls its parameters by the layer's name).
  std::string module(uint32_t offset = 0) const {
    return name.empty() ? std::to_string(torch_index + offset) : name;
  }
};

// A layer, as Keras has it: it declares its tensors when it learns its
// input shapes, then computes forward and backward passes. A program adds
// its own with register_layer.
class Layer {
 public:
  virtual ~Layer() = default;

  // How many inputs the layer takes (the model checks before build()).
  virtual uint32_t min_inputs() const { return 1; }
  virtual uint32_t max_inputs() const { return 1; }

  // Checks the input shapes, declares the layer's tensors in `store`
  // (named site.module() + ".weight" etc.) and returns the output shape.
  virtual Result<Shape> build(const Shapes& inputs, const LayerSite& site, ParameterStore& store) = 0;
  // Initial values of the declared tensors, drawn from `rng` in Keras' order.
  virtual void initialize(ParameterStore& store, std::mt19937_64& rng) const {
    (void)store;
    (void)rng;
  }
  virtual Status forward(LayerContext& context, ParameterStore& store, const Inputs& inputs,
                         Activations& output) = 0;
  // From dL/d(output): sets the gradients of the layer's trainable tensors
  // and dL/d(input i) for each non-null input_gradients[i]. `inputs` and
  // `output` are those of the last training forward pass.
  virtual Status backward(LayerContext& context, ParameterStore& store, const Inputs& inputs,
                          const Activations& output, const Activations& output_gradient,
                          const InputGradients& input_gradients) = 0;

  // Whether the card may keep the layer's output (its input): the layer
  // writes that tensor and reads its gradient (reads the tensor and writes
  // its gradient) only through the executor, honouring Activations'
  // on_card. The model keeps a tensor on the card when its producer and its
  // one consumer both allow it.
  virtual bool output_on_card() const { return false; }
  virtual bool input_on_card() const { return false; }
  // Whether the layer, on the card, only names its input anew (Flatten: a
  // view, nothing moves): its output is then on the card exactly when its
  // input is.
  virtual bool renames_on_card() const { return false; }

  // Whether the model may carry the inputs' padding mask to the output
  // when the layer sets none itself and the output keeps the positions
  // (Keras' supports_masking): false for layers that rearrange positions.
  virtual bool passes_mask() const { return true; }

  // How many modules of the equivalent torch.nn.Sequential this layer is
  // (a Dense with a fused ReLU is Linear + ReLU: 2).
  virtual uint32_t torch_modules() const { return 1; }
  // Those modules as PyTorch code, for the model summary and the docs:
  // "torch.nn.Conv2d(1, 32, 3, padding='same'), torch.nn.ReLU()".
  virtual std::string torch_code() const = 0;
};

// Copies the input (Flatten of a flat input, inference-time Dropout).
void pass_through(const Activations& input, Activations& output);
// Room for the values of `tensor` (its batch and shape set): on the card
// when it is on_card (its card tensor, made once and kept while it has
// room for the batch; no host values), else host values of that size, as
// they were.
Status place_values(LayerContext& context, Activations& tensor);
// Gives `gradient` the batch and shape of `input`, all zeros (on the
// host: a layer whose input the card may keep uses gradient_like).
void zeros_like(const Activations& input, Activations& gradient);
// The same where the card may keep the gradient: there, a card tensor of
// that size (place_values) that products then write.
Status gradient_like(LayerContext& context, const Activations& input, Activations& gradient);

// Makes a layer from its config's fields, read through `args` (a field no
// reader asks for is an error).
using LayerFactory = std::function<Result<std::unique_ptr<Layer>>(LayerArgs& args)>;

// Adds a layer type a config can name (Keras' registration): the built-in
// types are there from the start (layer_types()); a name is taken once.
Status register_layer(const std::string& type, LayerFactory factory);

// The layer a config names, its fields checked.
Result<std::unique_ptr<Layer>> make_layer(const LayerConfig& config);
std::vector<std::string> layer_types();

}  // namespace systole
