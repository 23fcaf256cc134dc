// Synchronous data-parallel training over replicas.
#include "systole/trainer.h"

#include <algorithm>
#include <cstring>

namespace systole {

Result<std::unique_ptr<Trainer>> Trainer::create(Device device, const std::vector<uint32_t>& units,
                                                 const TrainerConfig& config) {
  if (units.empty()) return Status(StatusCode::kInvalidArgument, "devices: no compute unit selected");
  SYSTOLE_RETURN_IF_ERROR(Optimizer::validate(config.optimizer));
  const uint32_t replicas = uint32_t(units.size());
  if (config.steps_per_execution == 0)
    return Status(StatusCode::kInvalidArgument, "steps_per_execution must be >= 1");
  if (config.global_batch == 0 || config.global_batch % replicas != 0)
    return Status(StatusCode::kInvalidArgument,
                  "global_batch " + std::to_string(config.global_batch) +
                      " does not divide evenly over " + std::to_string(replicas) + " replicas");
  std::unique_ptr<Trainer> trainer(new Trainer(config, replicas));
  const std::vector<float> initial = init_parameters(config.shape, config.seed);
  for (uint32_t unit : units) {
    auto engine = Replica::create(device, unit, config.shape,
                                  config.global_batch / replicas * config.steps_per_execution);
    if (!engine.ok()) return engine.status();
    trainer->replicas_.push_back(
        {std::move(engine).value(), initial, Optimizer(config.optimizer, initial.size()), {}});
    SYSTOLE_RETURN_IF_ERROR(trainer->replicas_.back().engine->load_parameters(initial));
  }
  return trainer;
}

Result<StepResult> Trainer::step(const Batch& batch) {
  if (batch.size != config_.global_batch)
    return Status(StatusCode::kInvalidArgument,
                  "batch of " + std::to_string(batch.size) + " examples, global_batch is " +
                      std::to_string(config_.global_batch));
  const uint32_t per_replica = per_replica_batch();
  const uint32_t features = config_.shape.inputs;
  std::vector<StepResult> results(replicas());
  const Status status = strategy_.run([&](uint32_t r) -> Status {
    ReplicaState& replica = replicas_[r];
    const std::size_t first = std::size_t(r) * per_replica;
    SYSTOLE_RETURN_IF_ERROR(replica.engine->train_step(
        batch.images.data() + first * features, batch.labels.data() + first, per_replica,
        float(config_.global_batch), replica.gradients, results[r]));
    SYSTOLE_RETURN_IF_ERROR(strategy_.all_reduce_sum(r, replica.gradients));
    replica.optimizer.apply(replica.parameters, replica.gradients);
    return replica.engine->load_parameters(replica.parameters);
  });
  if (!status.ok()) return status;
  StepResult total;
  std::vector<double> losses, corrects;
  for (const StepResult& result : results) {
    losses.push_back(result.loss_sum);
    corrects.push_back(result.correct);
    total.examples += result.examples;
  }
  total.loss_sum = Strategy::reduce(ReduceOp::kSum, losses);
  total.correct = uint32_t(Strategy::reduce(ReduceOp::kSum, corrects));
  return total;
}

Result<StepResult> Trainer::evaluate(const Dataset& data) {
  const uint32_t n = replicas();
  std::vector<StepResult> results(n);
  const uint32_t batch = per_replica_batch() * config_.steps_per_execution;
  const Status status = strategy_.run([&](uint32_t r) -> Status {
    const uint32_t first = uint32_t(uint64_t(data.examples) * r / n);
    const uint32_t last = uint32_t(uint64_t(data.examples) * (r + 1) / n);
    for (uint32_t at = first; at < last; at += batch) {
      const uint32_t count = std::min(batch, last - at);
      SYSTOLE_RETURN_IF_ERROR(replicas_[r].engine->evaluate(
          data.images.data() + std::size_t(at) * data.features, data.labels.data() + at, count,
          results[r]));
    }
    return ok_status();
  });
  if (!status.ok()) return status;
  StepResult total;
  for (const StepResult& result : results) {
    total.loss_sum += result.loss_sum;
    total.correct += result.correct;
    total.examples += result.examples;
  }
  return total;
}

bool Trainer::replicas_identical() const {
  for (const ReplicaState& replica : replicas_)
    if (std::memcmp(replica.parameters.data(), replicas_[0].parameters.data(),
                    replica.parameters.size() * sizeof(float)) != 0)
      return false;
  return true;
}

Status Trainer::restore(const std::vector<float>& parameters,
                        const std::vector<std::pair<std::string, std::vector<float>>>& optimizer_state,
                        uint64_t optimizer_steps) {
  for (ReplicaState& replica : replicas_) {
    if (parameters.size() != replica.parameters.size())
      return Status(StatusCode::kInvalidArgument,
                    "checkpoint has " + std::to_string(parameters.size()) +
                        " parameters, the model " + std::to_string(replica.parameters.size()));
    replica.parameters = parameters;
    for (const auto& [name, values] : optimizer_state)
      SYSTOLE_RETURN_IF_ERROR(replica.optimizer.restore(name, values, optimizer_steps));
    SYSTOLE_RETURN_IF_ERROR(replica.engine->load_parameters(parameters));
  }
  return ok_status();
}

}  // namespace systole
