// SPDX-License-Identifier: Apache-2.0
// SGD with momentum, Adam and sparse Adagrad, as Keras defines them.
#include "systole/optimizer.h"

#include <algorithm>
#include <cmath>

namespace systole {

Optimizer::Optimizer(const OptimizerConfig& config, std::size_t parameters, std::size_t table_values)
    : config_(config),
      first_(parameters, 0.0f),
      accumulator_(table_values, config.table_initial_accumulator) {
  if (config.name == "adam") second_.assign(parameters, 0.0f);
}

Status Optimizer::validate(const OptimizerConfig& config) {
  if (config.name != "adam" && config.name != "sgd")
    return Status(StatusCode::kInvalidArgument, "optimizer: expected adam or sgd, got '" + config.name + "'");
  if (!(config.learning_rate > 0) || !std::isfinite(config.learning_rate))
    return Status(StatusCode::kInvalidArgument, "learning_rate must be a positive number");
  if (!(config.momentum >= 0 && config.momentum < 1))
    return Status(StatusCode::kInvalidArgument, "momentum must be in [0, 1)");
  if (!(config.table_learning_rate > 0) || !std::isfinite(config.table_learning_rate))
    return Status(StatusCode::kInvalidArgument, "embedding_learning_rate must be a positive number");
  if (!(config.table_initial_accumulator >= 0) || !std::isfinite(config.table_initial_accumulator))
    return Status(StatusCode::kInvalidArgument, "embedding_initial_accumulator must be a number >= 0");
  const LearningRateSchedule& schedule = config.schedule;
  if (schedule.kind != LearningRateSchedule::Kind::kConstant && schedule.decay_steps == 0)
    return Status(
        StatusCode::kInvalidArgument,
        std::string("schedule ") + LearningRateSchedule::name(schedule.kind) + ": decay_steps must be >= 1");
  if (!(schedule.decay_rate > 0 && schedule.decay_rate <= 1))
    return Status(StatusCode::kInvalidArgument, "decay_rate must be in (0, 1]");
  return ok_status();
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
  return Status(StatusCode::kInvalidArgument,
                "expected constant, cosine, exponential or step, got '" + name + "'");
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

float Optimizer::learning_rate() const {
  return float(config_.schedule.rate(double(config_.learning_rate), steps_));
}

void Optimizer::apply(std::vector<float>& parameters, const std::vector<float>& gradients) {
  const float lr = learning_rate();
  ++steps_;
  if (config_.name == "sgd") {
    // Keras SGD: velocity = momentum * velocity - lr * g; w += velocity.
    for (std::size_t i = 0; i < parameters.size(); ++i) {
      first_[i] = config_.momentum * first_[i] - lr * gradients[i];
      parameters[i] += first_[i];
    }
    return;
  }
  const float b1 = config_.beta1, b2 = config_.beta2;
  const double t = double(steps_);
  const float correction1 = float(1.0 - std::pow(double(b1), t));
  const float correction2 = float(1.0 - std::pow(double(b2), t));
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    const float g = gradients[i];
    first_[i] = b1 * first_[i] + (1.0f - b1) * g;
    second_[i] = b2 * second_[i] + (1.0f - b2) * g * g;
    const float m_hat = first_[i] / correction1;
    const float v_hat = second_[i] / correction2;
    parameters[i] -= lr * m_hat / (std::sqrt(v_hat) + config_.epsilon);
  }
}

void Optimizer::apply_sparse(ParameterStore& store) {
  const float lr = config_.table_learning_rate, epsilon = config_.epsilon;
  for (std::size_t t = 0; t < store.entries().size(); ++t) {
    const ParameterStore::Entry& entry = store.entries()[t];
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
        table[at + j] -= lr * g[j] / (std::sqrt(accumulator[at + j]) + epsilon);
      }
    }
  }
}

std::vector<OptimizerSlot> Optimizer::state() const {
  std::vector<OptimizerSlot> slots;
  if (config_.name == "sgd")
    slots.push_back({"velocity", Region::kTrainable, &first_});
  else
    slots.insert(slots.end(), {{"m", Region::kTrainable, &first_}, {"v", Region::kTrainable, &second_}});
  if (!accumulator_.empty()) slots.push_back({"accumulator", Region::kTable, &accumulator_});
  return slots;
}

Status Optimizer::restore(const std::string& name, const std::vector<float>& values, uint64_t steps) {
  std::vector<float>* target = nullptr;
  if (name == "velocity" && config_.name == "sgd") target = &first_;
  if (name == "m" && config_.name == "adam") target = &first_;
  if (name == "v" && config_.name == "adam") target = &second_;
  if (name == "accumulator" && !accumulator_.empty()) target = &accumulator_;
  if (!target)
    return Status(StatusCode::kInvalidArgument,
                  "optimizer state '" + name + "' does not belong to " + config_.name);
  if (values.size() != target->size())
    return Status(StatusCode::kInvalidArgument,
                  "optimizer state '" + name + "' has " + std::to_string(values.size()) +
                      " values, the model has " + std::to_string(target->size()));
  *target = values;
  steps_ = steps;
  return ok_status();
}

}  // namespace systole
