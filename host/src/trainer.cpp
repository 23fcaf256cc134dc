// Synchronous data-parallel training over replicas.
#include "systole/trainer.h"

#include <algorithm>
#include <cstring>

namespace systole {

Result<std::unique_ptr<Trainer>> Trainer::create(Device device, const std::vector<uint32_t>& units,
                                                 const TrainerConfig& config, ProcessGroup* group) {
  if (units.empty()) return Status(StatusCode::kInvalidArgument, "devices: no compute unit selected");
  SYSTOLE_RETURN_IF_ERROR(Optimizer::validate(config.optimizer));
  const uint32_t local = uint32_t(units.size());
  uint32_t replicas = local;
  if (group && group->size() > 1) {
    auto counts = group->all_gather({double(local)});
    if (!counts.ok()) return counts.status();
    for (uint32_t rank = 0; rank < group->size(); ++rank)
      if ((*counts)[rank] != double(local))
        return Status(StatusCode::kInvalidArgument,
                      "devices: process " + std::to_string(rank) + " runs " +
                          std::to_string(uint32_t((*counts)[rank])) + " replica(s), process " +
                          std::to_string(group->rank()) + " runs " + std::to_string(local) +
                          "; every process of the job must run the same number");
    replicas = local * group->size();
  }
  if (config.steps_per_execution == 0)
    return Status(StatusCode::kInvalidArgument, "steps_per_execution must be >= 1");
  if (config.global_batch == 0 || config.global_batch % replicas != 0)
    return Status(StatusCode::kInvalidArgument,
                  "global_batch " + std::to_string(config.global_batch) +
                      " does not divide evenly over " + std::to_string(replicas) + " replicas");
  std::unique_ptr<Trainer> trainer(new Trainer(config, local, group));
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
  std::vector<StepResult> results(local_replicas());
  const Status status = strategy_.run([&](uint32_t r) -> Status {
    ReplicaState& replica = replicas_[r];
    // This replica's slice of the global batch, by its global index.
    const std::size_t first = std::size_t(strategy_.first_replica() + r) * per_replica;
    SYSTOLE_RETURN_IF_ERROR(replica.engine->train_step(
        batch.images.data() + first * features, batch.labels.data() + first, per_replica,
        float(config_.global_batch), replica.gradients, results[r]));
    SYSTOLE_RETURN_IF_ERROR(strategy_.all_reduce_sum(r, replica.gradients));
    replica.optimizer.apply(replica.parameters, replica.gradients);
    return replica.engine->load_parameters(replica.parameters);
  });
  if (!status.ok()) return status;
  return combine(results);
}

Result<StepResult> Trainer::combine(const std::vector<StepResult>& local) const {
  std::vector<std::vector<double>> per_replica;
  for (const StepResult& result : local)
    per_replica.push_back({result.loss_sum, double(result.correct), double(result.examples)});
  auto sums = strategy_.reduce(ReduceOp::kSum, per_replica);  // one exchange per step
  if (!sums.ok()) return sums.status();
  StepResult total;
  total.loss_sum = (*sums)[0];
  total.correct = uint32_t((*sums)[1]);
  total.examples = uint32_t((*sums)[2]);
  return total;
}

Result<StepResult> Trainer::evaluate(const Dataset& data) {
  const uint32_t n = replicas();
  std::vector<StepResult> results(local_replicas());
  const uint32_t batch = per_replica_batch() * config_.steps_per_execution;
  const Status status = strategy_.run([&](uint32_t r) -> Status {
    const uint32_t global = strategy_.first_replica() + r;
    const uint32_t first = uint32_t(uint64_t(data.examples) * global / n);
    const uint32_t last = uint32_t(uint64_t(data.examples) * (global + 1) / n);
    for (uint32_t at = first; at < last; at += batch) {
      const uint32_t count = std::min(batch, last - at);
      SYSTOLE_RETURN_IF_ERROR(replicas_[r].engine->evaluate(
          data.images.data() + std::size_t(at) * data.features, data.labels.data() + at, count,
          results[r]));
    }
    return ok_status();
  });
  if (!status.ok()) return status;
  return combine(results);
}

Result<bool> Trainer::replicas_identical() const {
  const std::vector<float>& first = replicas_[0].parameters;
  for (const ReplicaState& replica : replicas_)
    if (std::memcmp(replica.parameters.data(), first.data(), first.size() * sizeof(float)) != 0)
      return false;
  ProcessGroup* group = strategy_.group();
  if (!group || group->size() == 1) return true;
  // Across processes: compare a 32-bit FNV-1a fingerprint of the bits (a
  // double holds it exactly).
  uint32_t hash = 2166136261u;
  const auto* bytes = reinterpret_cast<const unsigned char*>(first.data());
  for (std::size_t i = 0; i < first.size() * sizeof(float); ++i) hash = (hash ^ bytes[i]) * 16777619u;
  auto all = group->all_gather({double(hash)});
  if (!all.ok()) return all.status();
  for (double other : *all)
    if (other != double(hash)) return false;
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
