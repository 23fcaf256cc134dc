// SPDX-License-Identifier: Apache-2.0
// The optimizer base class (steps, schedule, slots, clipping, weight decay,
// the tables' sparse Adagrad), the learning-rate schedules and the
// optimizer registry.
#include "systole/optimizer.h"

#include <algorithm>
#include <cmath>

#include "builtin_optimizers.h"
#include "registry.h"

namespace systole {
namespace {

Registry<OptimizerFactory>& optimizers() {
  static Registry<OptimizerFactory> registry("optimizer", builtin_optimizers());
  return registry;
}

Status invalid(const std::string& message) { return Status(StatusCode::kInvalidArgument, message); }

bool positive(float value) { return value > 0 && std::isfinite(value); }

// The checks every optimizer shares; errors name the config's field.
Status validate_common(const OptimizerConfig& config) {
  if (!positive(config.learning_rate))
    return invalid("learning_rate must be a positive number, got " + std::to_string(config.learning_rate));
  if (!(config.clipnorm >= 0) || !std::isfinite(config.clipnorm))
    return invalid("clipnorm must be a number >= 0 (0: off)");
  if (!(config.global_clipnorm >= 0) || !std::isfinite(config.global_clipnorm))
    return invalid("global_clipnorm must be a number >= 0 (0: off)");
  if (config.clipnorm > 0 && config.global_clipnorm > 0)
    return invalid("clipnorm and global_clipnorm: set at most one of them");
  if (config.weight_decay && (!(*config.weight_decay >= 0) || !std::isfinite(*config.weight_decay)))
    return invalid("weight_decay must be a number >= 0");
  if (!positive(config.embedding_learning_rate))
    return invalid("embedding_learning_rate must be a positive number");
  if (!(config.embedding_initial_accumulator >= 0) || !std::isfinite(config.embedding_initial_accumulator))
    return invalid("embedding_initial_accumulator must be a number >= 0");
  if (!positive(config.epsilon)) return invalid("epsilon must be a positive number");
  const LearningRateSchedule& schedule = config.schedule;
  if (schedule.kind != LearningRateSchedule::Kind::kConstant && schedule.decay_steps == 0)
    return invalid(std::string("schedule ") + LearningRateSchedule::name(schedule.kind) +
                   ": decay_steps must be >= 1");
  if (!(schedule.decay_rate > 0 && schedule.decay_rate <= 1)) return invalid("decay_rate must be in (0, 1]");
  return ok_status();
}

// Sum of squares in double, in index order.
double squares(const float* values, std::size_t size) {
  double sum = 0;
  for (std::size_t i = 0; i < size; ++i) sum += double(values[i]) * double(values[i]);
  return sum;
}

// values *= limit / norm when norm > limit (Keras' clip_by_norm).
void clip(float* values, std::size_t size, double norm, float limit) {
  if (!(norm > double(limit))) return;
  const float scale = float(double(limit) / norm);
  for (std::size_t i = 0; i < size; ++i) values[i] *= scale;
}

}  // namespace

Status register_optimizer(const std::string& name, OptimizerFactory factory) {
  return optimizers().add(name, std::move(factory));
}

std::vector<std::string> optimizer_names() { return optimizers().names(); }

Status validate_optimizer(const OptimizerConfig& config) {
  auto optimizer = make_optimizer(config, ParameterStore());
  return optimizer.ok() ? ok_status() : optimizer.status();
}

Result<std::unique_ptr<Optimizer>> make_optimizer(const OptimizerConfig& config,
                                                  const ParameterStore& store) {
  auto factory = optimizers().find(config.name);
  if (!factory.ok()) return Status(StatusCode::kInvalidArgument, "optimizer: " + factory.status().message());
  SYSTOLE_RETURN_IF_ERROR(validate_common(config));
  auto optimizer = (*factory)(config);
  if (!optimizer.ok())
    return Status(optimizer.status().code(),
                  "optimizer " + config.name + ": " + optimizer.status().message());
  if (!*optimizer) return invalid("optimizer " + config.name + ": its factory made no optimizer");
  (*optimizer)->build(store);
  return optimizer;
}

double LearningRateSchedule::rate(double lr, uint64_t t) const {
  if (t < warmup_steps) return lr * double(t + 1) / double(warmup_steps);
  const uint64_t u = t - warmup_steps;
  const double d = double(std::max<uint64_t>(decay_steps, 1));
  switch (kind) {
    case Kind::kConstant:
      return lr;
    case Kind::kCosine:
      return lr * 0.5 *
             (1.0 + std::cos(3.14159265358979323846 * double(std::min<uint64_t>(u, decay_steps)) / d));
    case Kind::kExponential:
      return lr * std::pow(decay_rate, double(u) / d);
    case Kind::kStep:
      return lr * std::pow(decay_rate, std::floor(double(u) / d));
  }
  return lr;
}

Result<LearningRateSchedule::Kind> LearningRateSchedule::parse(const std::string& name) {
  for (Kind kind : {Kind::kConstant, Kind::kCosine, Kind::kExponential, Kind::kStep})
    if (name == LearningRateSchedule::name(kind)) return kind;
  return invalid("expected constant, cosine, exponential or step, got '" + name + "'");
}

const char* LearningRateSchedule::name(Kind kind) {
  switch (kind) {
    case Kind::kConstant:
      return "constant";
    case Kind::kCosine:
      return "cosine";
    case Kind::kExponential:
      return "exponential";
    case Kind::kStep:
      return "step";
  }
  return "?";
}

void Optimizer::add_slot(const std::string& name, float initial) { slots_.push_back({name, initial, {}}); }

void Optimizer::build(const ParameterStore& store) {
  for (Slot& slot : slots_) slot.values.assign(store.trainable().size(), slot.initial);
  accumulator_.assign(store.tables().size(), config_.embedding_initial_accumulator);
  slot_pointers_.resize(slots_.size());
}

float Optimizer::learning_rate() const {
  return float(config_.schedule.rate(double(config_.learning_rate), steps_));
}

void Optimizer::apply(ParameterStore& store) {
  const float lr = learning_rate();
  ++steps_;
  const std::vector<ParameterStore::Entry>& entries = store.entries();
  if (config_.global_clipnorm > 0) {
    double sum = 0;
    for (std::size_t t = 0; t < entries.size(); ++t)
      if (entries[t].region == Region::kTrainable) sum += squares(store.gradient(t), entries[t].size);
    const double norm = std::sqrt(sum);
    for (std::size_t t = 0; t < entries.size(); ++t)
      if (entries[t].region == Region::kTrainable)
        clip(store.gradient(t), entries[t].size, norm, config_.global_clipnorm);
  }
  const float shrink_alpha = decay_alpha(lr);
  for (std::size_t t = 0; t < entries.size(); ++t) {
    const ParameterStore::Entry& entry = entries[t];
    if (entry.region != Region::kTrainable) continue;
    float* gradient = store.gradient(t);
    if (config_.clipnorm > 0)
      clip(gradient, entry.size, std::sqrt(squares(gradient, entry.size)), config_.clipnorm);
    float* values = store.values(t);
    if (shrink_alpha != 0) {
      // w -= (lr * decay) * w, as the engine's axpby(-(lr * decay), 1).
      spec::VectorScalars shrink;
      shrink.alpha = shrink_alpha;
      shrink.beta = 1.0f;
      spec::vector_apply(spec::Opcode::kAxpby, shrink, entry.size, values, values, nullptr, nullptr);
    }
    for (std::size_t k = 0; k < slots_.size(); ++k)
      slot_pointers_[k] = slots_[k].values.data() + entry.offset;
    update({entry, values, gradient, entry.size, slot_pointers_.data()}, lr);
  }
  apply_tables(store);
}

bool Optimizer::steps_on_engine() const {
  return vector_update(learning_rate()).has_value() && config_.clipnorm == 0 && config_.global_clipnorm == 0;
}

Optimizer::EngineStep Optimizer::take_engine_step() {
  const float lr = learning_rate();
  ++steps_;
  EngineStep step;
  step.decay_alpha = decay_alpha(lr);
  step.update = *vector_update(lr);
  return step;
}

float Optimizer::decay_alpha(float lr) const {
  const float decay = decoupled_weight_decay() ? weight_decay() : 0.0f;
  return decay > 0 ? -(lr * decay) : 0.0f;
}

void Optimizer::apply_tables(ParameterStore& store) {
  const std::vector<ParameterStore::Entry>& entries = store.entries();
  const float table_lr = config_.embedding_learning_rate, epsilon = config_.epsilon;
  for (std::size_t t = 0; t < entries.size(); ++t) {
    const ParameterStore::Entry& entry = entries[t];
    if (entry.region != Region::kTable) continue;
    const std::size_t width = std::size_t(entry.shape[1]);
    const RowSparse& gradient = store.sparse_gradient(t);
    float* table = store.values(t);
    float* accumulator = accumulator_.data() + entry.offset;
    for (std::size_t i = 0; i < gradient.rows.size(); ++i) {
      const std::size_t at = std::size_t(gradient.rows[i]) * width;
      const float* g = gradient.values.data() + i * width;
      for (std::size_t j = 0; j < width; ++j) {
        accumulator[at + j] += g[j] * g[j];
        table[at + j] -= table_lr * g[j] / (std::sqrt(accumulator[at + j]) + epsilon);
      }
    }
  }
}

void Optimizer::run_vector_update(const Tensor& tensor, const VectorUpdate& form) const {
  float* operands[3] = {nullptr, nullptr, nullptr};  // y, z, w: the slots, then the values
  const std::size_t slots = std::min<std::size_t>(slots_.size(), 2);
  for (std::size_t k = 0; k < slots; ++k) operands[k] = tensor.slots[k];
  operands[slots] = tensor.values;
  spec::vector_apply(form.opcode, form.scalars, tensor.size, tensor.gradient, operands[0], operands[1],
                     operands[2]);
}

std::vector<OptimizerSlot> Optimizer::state() const {
  std::vector<OptimizerSlot> slots;
  for (const Slot& slot : slots_) slots.push_back({slot.name, Region::kTrainable, &slot.values});
  if (!accumulator_.empty()) slots.push_back({"accumulator", Region::kTable, &accumulator_});
  return slots;
}

Status Optimizer::restore(const std::vector<std::pair<std::string, std::vector<float>>>& slots,
                          uint64_t steps) {
  std::vector<OptimizerSlot> own = state();
  std::string names;
  for (const OptimizerSlot& slot : own) names += (names.empty() ? "" : ", ") + slot.name;
  if (slots.size() != own.size())
    return invalid("optimizer state: " + std::to_string(slots.size()) + " slot(s) given, " + config_.name +
                   " keeps " + std::to_string(own.size()) + " (" + names + ")");
  for (std::size_t k = 0; k < own.size(); ++k) {
    if (slots[k].first != own[k].name)
      return invalid("optimizer state '" + slots[k].first + "' does not belong to " + config_.name +
                     " (its slots: " + names + ")");
    if (slots[k].second.size() != own[k].values->size())
      return invalid("optimizer state '" + slots[k].first + "' has " +
                     std::to_string(slots[k].second.size()) + " values, the model has " +
                     std::to_string(own[k].values->size()));
  }
  for (std::size_t k = 0; k < slots_.size(); ++k) slots_[k].values = slots[k].second;
  if (!accumulator_.empty()) accumulator_ = slots.back().second;
  steps_ = steps;
  return ok_status();
}

}  // namespace systole
