// SPDX-License-Identifier: Apache-2.0
// The optimizers that update a model's fp32 master parameters, with their
// state for checkpoints: one class per algorithm over a base class, found
// by name in an open registry (SGD with momentum or Nesterov, Adam, AdamW,
// Adagrad and LARS are built in) for the dense tensors, and Adagrad for
// embedding tables, applied to the rows a step touched only (as TPU
// embeddings are trained: a row no example used keeps its values and its
// accumulator, which is also what dense Adagrad would do with its zero
// gradient).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "systole/parameters.h"
#include "systole/status.h"
#include "systole/vector_ops.h"

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

// An optimizer's settings, as Keras' optimizers take them. Each optimizer
// reads the fields it uses; `options` holds the settings of optimizers a
// program registers itself.
struct OptimizerConfig {
  std::string name = "adam";  // a registered optimizer (optimizer_names())
  float learning_rate = 1e-3f;
  float momentum = 0.9f;               // sgd, lars
  bool nesterov = false;               // sgd, lars
  float beta1 = 0.9f, beta2 = 0.999f;  // adam, adamw
  float epsilon = 1e-7f;               // adam, adamw, adagrad and the tables' Adagrad
  float initial_accumulator = 0.1f;    // adagrad
  float trust_coefficient = 0.001f;    // lars: eta of the layer-wise trust ratio
  // Weight decay; unset takes the optimizer's default (adamw 0.004 as in
  // Keras, lars 1e-4 as in TensorFlow's reference LARS, the others 0). LARS
  // adds it to the gradient inside its trust ratio; every other optimizer
  // decouples it as Keras and AdamW do: w -= lr * weight_decay * w before
  // the update.
  std::optional<float> weight_decay;
  // Gradient clipping, as Keras' optimizers do it (0: off; at most one of
  // the two): clipnorm scales each tensor's gradient to an L2 norm of at
  // most clipnorm, global_clipnorm all dense gradients together to a joint
  // norm of at most global_clipnorm. Norms are summed in double, tensor by
  // tensor in the store's order, each in index order. The tables'
  // row-sparse gradients are not clipped.
  float clipnorm = 0.0f;
  float global_clipnorm = 0.0f;
  LearningRateSchedule schedule;
  // Embedding tables (Keras' Adagrad: accumulator += g^2,
  // w -= lr * g / (sqrt(accumulator) + epsilon)); the rate is constant.
  float embedding_learning_rate = 0.05f;
  float embedding_initial_accumulator = 0.1f;
  // Settings of a registered optimizer, by name.
  std::map<std::string, double> options;
};

// One slot of optimizer state: its name, the region of the store it
// parallels (one value per value of that region) and the values.
struct OptimizerSlot {
  std::string name;
  Region region;
  const std::vector<float>* values;
};

// The base of every optimizer (Keras' one class per algorithm): it owns the
// step counter, the learning-rate schedule, the slots, gradient clipping,
// decoupled weight decay and the tables' sparse Adagrad; a subclass
// declares its slots and updates one dense tensor at a time.
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  const OptimizerConfig& config() const { return config_; }
  // The weight decay in effect (the config's, or the optimizer's default).
  float weight_decay() const { return config_.weight_decay.value_or(default_weight_decay()); }
  // Sizes the slots for `store`'s tensors (make_optimizer calls it).
  void build(const ParameterStore& store);

  // One step on `store`: its dense gradients (as the all-reduce left them)
  // are clipped, each trainable tensor is updated in the store's order,
  // then the rows of every table's sparse gradient, in row order.
  void apply(ParameterStore& store);

  // Steps taken (Keras' iterations).
  uint64_t steps() const { return steps_; }
  // The learning rate of the next step.
  float learning_rate() const;
  // State for checkpoints: the subclass's slots over the trainable tensors,
  // then "accumulator" over the tables when the model has any.
  std::vector<OptimizerSlot> state() const;
  // Restores every slot of state(), by name and in its order.
  Status restore(const std::vector<std::pair<std::string, std::vector<float>>>& slots, uint64_t steps);

  // The vector engine's form of the update of one tensor at learning rate
  // `lr` in the step steps() counts, for an optimizer that has one: an
  // opcode whose x is the gradient, whose next operands are the slots in
  // their declared order and then the values, and its scalars. Such an
  // optimizer updates on the host through the engine's own arithmetic
  // (run_vector_update), so a card that runs the update gives the same
  // bits. The others (Adagrad, LARS, a program's own) return none.
  struct VectorUpdate {
    spec::Opcode opcode;
    spec::VectorScalars scalars;
  };
  virtual std::optional<VectorUpdate> vector_update(float /*lr*/) const { return std::nullopt; }

  // A step as a card runs it (placement: device): the decoupled weight
  // decay, axpby(decay_alpha, 1) of the weights onto themselves when
  // decay_alpha is not zero, then the update, each over the whole
  // trainable region at once (the scalars are the same for every tensor,
  // so this is apply()'s dense part, bit for bit).
  struct EngineStep {
    float decay_alpha = 0.0f;
    VectorUpdate update;
  };
  // Whether the dense part of a step can run on the engine: the optimizer
  // has a vector_update and clips no gradients (a norm is host work).
  bool steps_on_engine() const;
  // The next step's engine form; counts the step as apply() does. Only
  // when steps_on_engine(). The tables' part stays apply_tables().
  EngineStep take_engine_step();
  // apply()'s last part: the tables' sparse Adagrad on the rows a step
  // touched (apply() runs it; a step taken on the engine calls it).
  void apply_tables(ParameterStore& store);

 protected:
  explicit Optimizer(const OptimizerConfig& config) : config_(config) {}

  // A slot over the trainable tensors, filled with `initial` by build();
  // declared in the constructor, in the order update() indexes them.
  void add_slot(const std::string& name, float initial = 0.0f);

  // One trainable tensor of one step.
  struct Tensor {
    const ParameterStore::Entry& entry;  // its name and shape
    float* values;
    const float* gradient;  // clipped
    std::size_t size;
    float* const* slots;  // each slot's values for this tensor, as declared
  };
  // Updates one tensor at learning rate `lr`; steps() counts this step
  // (1 on the first).
  virtual void update(const Tensor& tensor, float lr) = 0;
  // update() for an optimizer with a vector_update: runs `form` over the
  // tensor with the engine's arithmetic.
  void run_vector_update(const Tensor& tensor, const VectorUpdate& form) const;
  // Whether the base applies weight decay (decoupled) before update().
  virtual bool decoupled_weight_decay() const { return true; }
  // The weight decay when the config leaves it unset.
  virtual float default_weight_decay() const { return 0.0f; }
  // The decoupled weight decay's factor at learning rate `lr`:
  // -(lr * decay), the engine's axpby alpha; 0 when there is none.
  float decay_alpha(float lr) const;

 private:
  struct Slot {
    std::string name;
    float initial;
    std::vector<float> values;
  };
  OptimizerConfig config_;
  uint64_t steps_ = 0;
  std::vector<Slot> slots_;
  std::vector<float> accumulator_;  // the tables' Adagrad
  std::vector<float*> slot_pointers_;
};

// Makes an optimizer: returns it, or an error naming the field at fault.
using OptimizerFactory = std::function<Result<std::unique_ptr<Optimizer>>(const OptimizerConfig& config)>;

// Adds an optimizer `name` can select (Keras' registration): the built-in
// sgd, adam, adamw, adagrad and lars are there from the start; a name is
// taken once.
Status register_optimizer(const std::string& name, OptimizerFactory factory);
std::vector<std::string> optimizer_names();

// The optimizer `config` names, with the settings every optimizer shares
// checked and its slots sized for `store`.
Result<std::unique_ptr<Optimizer>> make_optimizer(const OptimizerConfig& config, const ParameterStore& store);
// The same checks without a model.
Status validate_optimizer(const OptimizerConfig& config);

}  // namespace systole
