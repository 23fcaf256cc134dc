// SPDX-License-Identifier: Apache-2.0
// Synchronous data-parallel training over replicas.
#include "systole/trainer.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "card_step.h"
#include "systole/trace.h"

namespace systole {
namespace {

// Seconds between successive calls of next(), from construction.
class Lap {
 public:
  double next() {
    const auto now = std::chrono::steady_clock::now();
    const double seconds = std::chrono::duration<double>(now - last_).count();
    last_ = now;
    return seconds;
  }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

}  // namespace

Trainer::Trainer(const TrainerConfig& config, uint32_t replicas, ProcessGroup* group)
    : config_(config), strategy_(replicas, group) {}

Trainer::~Trainer() = default;

Result<std::unique_ptr<Trainer>> Trainer::create(Device device, const std::vector<uint32_t>& units,
                                                 const TrainerConfig& config, ProcessGroup* group) {
  if (units.empty()) return Status(StatusCode::kInvalidArgument, "devices: no compute unit selected");
  for (std::size_t i = 0; i < units.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (units[i] == units[j])  // two replicas on one unit would race for its buffers
        return Status(StatusCode::kInvalidArgument, "devices: compute unit " + std::to_string(units[i]) +
                                                        " is given twice (replica " + std::to_string(j) +
                                                        " and " + std::to_string(i) + ")");
  SYSTOLE_RETURN_IF_ERROR(validate_optimizer(config.optimizer));
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
    return Status(StatusCode::kInvalidArgument, "global_batch " + std::to_string(config.global_batch) +
                                                    " does not divide evenly over " +
                                                    std::to_string(replicas) + " replicas");
  std::unique_ptr<Trainer> trainer(new Trainer(config, local, group));
  auto loss = make_loss(config.loss);
  if (!loss.ok()) return Status(loss.status().code(), "loss." + loss.status().message());
  trainer->loss_ = std::move(loss).value();
  for (std::size_t i = 0; i < config.metrics.size(); ++i) {
    auto metric = make_metric(config.metrics[i]);
    if (!metric.ok())
      return Status(metric.status().code(),
                    "metrics[" + std::to_string(i) + "]." + metric.status().message());
    trainer->metric_sums_ += (*metric)->sums();
    trainer->metrics_.push_back(std::move(metric).value());
  }
  // The loss and metrics against the model's output, on the first
  // replica's model before any device work (a [positions, classes]
  // sequence output has a label per position unless the config says
  // otherwise).
  auto first = Model::build(config.model, config.seed);
  if (!first.ok()) return first.status();
  std::unique_ptr<Model> unplaced = std::move(first).value();
  const Shape output = unplaced->logits_shape();
  if (trainer->config_.label_width == 0) trainer->config_.label_width = output.size() == 2 ? output[0] : 1;
  const uint32_t label_width = trainer->config_.label_width;
  if (Status fits = trainer->loss_->check(output, label_width); !fits.ok())
    return Status(fits.code(), "loss " + config.loss.type + ": " + fits.message());
  for (std::size_t i = 0; i < trainer->metrics_.size(); ++i)
    if (Status fits = trainer->metrics_[i]->check(output, label_width); !fits.ok())
      return Status(fits.code(),
                    "metrics[" + std::to_string(i) + "] " + config.metrics[i].type + ": " + fits.message());
  for (uint32_t unit : units) {
    auto matmul = DeviceMatmul::create(device, unit, config.launch_timeout);
    if (!matmul.ok()) return matmul.status();
    std::unique_ptr<Model> model = std::move(unplaced);  // the first replica's; the others build their own
    if (!model) {
      auto built = Model::build(config.model, config.seed);
      if (!built.ok()) return built.status();
      model = std::move(built).value();
    }
    auto optimizer = make_optimizer(config.optimizer, model->parameters());
    if (!optimizer.ok()) return optimizer.status();
    trainer->replicas_.push_back(
        {std::move(matmul).value(), std::move(model), std::move(optimizer).value(), {}});
  }
  if (config.placement == Placement::kDevice) {
    std::vector<CardStep::Replica> on_card;
    for (ReplicaState& replica : trainer->replicas_)
      on_card.push_back({replica.matmul.get(), &replica.model->parameters(), replica.optimizer.get()});
    auto card = CardStep::create(device, units, std::move(on_card), trainer->strategy_, config.optimizer,
                                 trainer->notices_);
    if (!card.ok()) return card.status();
    trainer->card_ = std::move(card).value();
  }
  // A modelled board times each replica's thread on its own; they meet
  // where the replicas do.
  if (std::optional<CardModel> model = device.card_model())
    trainer->strategy_.set_meeting([model = *model, local](uint32_t) { model.meet_host_threads(local); });
  return trainer;
}

void Trainer::sync_to_host() const {
  if (card_) card_->sync_to_host();
}

LayerContext Trainer::context(uint32_t r, bool training) {
  LayerContext context;
  context.matmul = replicas_[r].matmul.get();
  context.training = training;
  context.seed = config_.seed;
  context.step = replicas_[r].optimizer->steps();
  context.replica = strategy_.first_replica() + r;
  context.replicas = replicas();
  if (training)
    context.all_reduce_sum = [this, r](std::vector<float>& values) {
      return strategy_.all_reduce_sum(r, values);
    };
  return context;
}

Result<StepResult> Trainer::step(const Batch& batch) { return train_step(batch, false); }

Result<StepResult> Trainer::step_local(const Batch& local) { return train_step(local, true); }

Result<StepResult> Trainer::train_step(const Batch& batch, bool local) {
  if (card_)
    if (Status synced = card_->take_sync_status(); !synced.ok()) return synced;
  const std::size_t features = shape_elements(config_.model.input_shape);
  const uint32_t per_replica = per_replica_batch();
  const uint32_t examples = (local ? local_replicas() : replicas()) * per_replica;
  // Global replica index of the batch's first example.
  const uint32_t first_replica = local ? strategy_.first_replica() : 0;
  const uint32_t width = config_.label_width;
  if (batch.size != examples || batch.values.size() != std::size_t(batch.size) * features ||
      batch.labels.size() != std::size_t(batch.size) * width)
    return Status(StatusCode::kInvalidArgument,
                  "batch of " + std::to_string(batch.size) + " examples of " +
                      std::to_string(batch.size ? batch.values.size() / batch.size : 0) + " values and " +
                      std::to_string(batch.size ? batch.labels.size() / batch.size : 0) +
                      " label(s); the step takes " + std::to_string(examples) + " of " +
                      std::to_string(features) + " and " + std::to_string(width));
  std::vector<StepResult> results(local_replicas());
  const Status status = strategy_.run([&](uint32_t r) -> Status {
    ReplicaState& replica = replicas_[r];
    LayerContext pass = context(r, true);
    // This replica's slice of the batch, by its global index.
    const std::size_t first = std::size_t(pass.replica - first_replica) * per_replica;
    const uint32_t track = Trace::replica_track(pass.replica);
    std::vector<float> logits_gradient;
    StepTimes& times = replica.times;
    const MatmulTimes device_before = replica.matmul->times();
    Lap lap;
    {
      TraceScope span("forward", "host", track);
      SYSTOLE_RETURN_IF_ERROR(
          replica.model->forward(pass, batch.values.data() + first * features, per_replica));
      auto scored = score(replica.model->logits(), batch.labels.data() + first * width,
                          float(config_.global_batch), &logits_gradient);
      if (!scored.ok()) return scored.status();
      results[r] = std::move(scored).value();
    }
    times.forward += lap.next();
    {
      TraceScope span("backward", "host", track);
      SYSTOLE_RETURN_IF_ERROR(replica.model->backward(pass, logits_gradient));
    }
    times.backward += lap.next();
    const MatmulTimes device = replica.matmul->times();
    times.device.staging_seconds += device.staging_seconds - device_before.staging_seconds;
    times.device.launch_seconds += device.launch_seconds - device_before.launch_seconds;
    ParameterStore& store = replica.model->parameters();
    if (card_) {
      // placement: device: the reduction and the update run on the card
      // (their launches count as the optimizer's time).
      TraceScope span("optimizer", "device", track);
      SYSTOLE_RETURN_IF_ERROR(card_->step(r));
      times.optimizer += lap.next();
      ++times.steps;
      return ok_status();
    }
    {
      TraceScope span("all-reduce", "host", track);
      SYSTOLE_RETURN_IF_ERROR(strategy_.all_reduce_sum(r, store.gradients()));
    }
    times.all_reduce += lap.next();
    {
      TraceScope span("optimizer", "host", track);
      replica.optimizer->apply(store);
    }
    times.optimizer += lap.next();
    ++times.steps;
    return ok_status();
  });
  if (!status.ok()) return status;
  return combine(results);
}

namespace {

// Every timed field of a StepTimes, for since() and the mean over replicas.
template <class Op>
void each_time(StepTimes& into, const StepTimes& other, Op op) {
  op(into.forward, other.forward);
  op(into.backward, other.backward);
  op(into.device.staging_seconds, other.device.staging_seconds);
  op(into.device.launch_seconds, other.device.launch_seconds);
  op(into.all_reduce, other.all_reduce);
  op(into.optimizer, other.optimizer);
}

}  // namespace

StepTimes StepTimes::since(const StepTimes& before) const {
  StepTimes delta = *this;
  delta.steps -= before.steps;
  each_time(delta, before, [](double& a, double b) { a -= b; });
  return delta;
}

StepTimes Trainer::step_times() const {
  StepTimes mean;
  mean.steps = replicas_[0].times.steps;
  const double share = 1.0 / double(replicas_.size());
  for (const ReplicaState& replica : replicas_)
    each_time(mean, replica.times, [&](double& a, double b) { a += b * share; });
  return mean;
}

Result<StepResult> Trainer::score(const Activations& output, const float* labels, float divisor,
                                  std::vector<float>* gradient) const {
  StepResult result;
  auto loss = loss_->compute(output, labels, config_.label_width, divisor, gradient);
  if (!loss.ok()) return loss.status();
  result.loss_sum = *loss;
  result.examples = output.batch;
  result.metric_sums.assign(metric_sums_, 0.0);
  double* sums = result.metric_sums.data();
  for (const auto& metric : metrics_) {
    SYSTOLE_RETURN_IF_ERROR(metric->update(output, labels, config_.label_width, sums));
    sums += metric->sums();
  }
  return result;
}

std::vector<std::pair<std::string, double>> Trainer::results(const StepResult& result) const {
  std::vector<std::pair<std::string, double>> values;
  values.emplace_back("loss", result.loss_sum / std::max<double>(result.examples, 1));
  const double* sums = result.metric_sums.data();
  for (const auto& metric : metrics_) {
    values.emplace_back(metric->name(), result.metric_sums.empty() ? 0.0 : metric->result(sums));
    if (!result.metric_sums.empty()) sums += metric->sums();
  }
  return values;
}

Result<StepResult> Trainer::combine(const std::vector<StepResult>& local) const {
  std::vector<std::vector<double>> per_replica;
  for (const StepResult& result : local) {
    std::vector<double> values{result.loss_sum, double(result.examples)};
    values.resize(2 + metric_sums_, 0.0);
    std::copy(result.metric_sums.begin(), result.metric_sums.end(), values.begin() + 2);
    per_replica.push_back(std::move(values));
  }
  auto sums = strategy_.reduce(ReduceOp::kSum, per_replica);  // one exchange per step
  if (!sums.ok()) return sums.status();
  StepResult total;
  total.loss_sum = (*sums)[0];
  total.examples = uint32_t((*sums)[1]);
  total.metric_sums.assign(sums->begin() + 2, sums->end());
  return total;
}

Result<StepResult> Trainer::evaluate(const Dataset& data) {
  const std::size_t features = shape_elements(config_.model.input_shape);
  if (data.features != features || data.label_width != config_.label_width)
    return Status(StatusCode::kInvalidArgument,
                  "data of " + std::to_string(data.features) + " values and " +
                      std::to_string(data.label_width) + " label(s) per example; the model takes " +
                      std::to_string(features) + " and " + std::to_string(config_.label_width));
  const uint32_t n = replicas();
  std::vector<StepResult> results(local_replicas());
  const uint32_t batch = per_replica_batch() * config_.steps_per_execution;
  const Status status = strategy_.run([&](uint32_t r) -> Status {
    LayerContext pass = context(r, false);
    const uint32_t global = pass.replica;
    TraceScope span("evaluate", "host", Trace::replica_track(global));
    const uint32_t first = uint32_t(uint64_t(data.examples) * global / n);
    const uint32_t last = uint32_t(uint64_t(data.examples) * (global + 1) / n);
    for (uint32_t at = first; at < last; at += batch) {
      const uint32_t count = std::min(batch, last - at);
      Model& model = *replicas_[r].model;
      SYSTOLE_RETURN_IF_ERROR(model.forward(pass, data.values.data() + std::size_t(at) * features, count));
      auto part =
          score(model.logits(), data.labels.data() + std::size_t(at) * config_.label_width, 1.0f, nullptr);
      if (!part.ok()) return part.status();
      results[r] += *part;
    }
    return ok_status();
  });
  if (!status.ok()) return status;
  return combine(results);
}

Result<std::vector<float>> Trainer::predict(const float* inputs, uint32_t count, std::size_t layers) {
  const std::size_t features = shape_elements(config_.model.input_shape);
  const uint32_t batch = per_replica_batch() * config_.steps_per_execution;
  std::vector<float> logits;
  LayerContext pass = context(0, false);
  Model& model = *replicas_[0].model;
  for (uint32_t at = 0; at < count; at += batch) {
    SYSTOLE_RETURN_IF_ERROR(
        model.forward(pass, inputs + std::size_t(at) * features, std::min(batch, count - at), layers));
    const std::vector<float>& out = model.output(layers).values;
    logits.insert(logits.end(), out.begin(), out.end());
  }
  return logits;
}

Result<bool> Trainer::replicas_identical() const {
  auto same = [](const std::vector<float>& a, const std::vector<float>& b) {
    // (memcmp of an empty region would pass it a null pointer.)
    return a.size() == b.size() &&
           (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
  };
  sync_to_host();
  const ParameterStore& first = parameters();
  for (const ReplicaState& replica : replicas_) {
    const ParameterStore& store = replica.model->parameters();
    for (Region region : {Region::kTrainable, Region::kBuffer, Region::kTable})
      if (!same(store.region(region), first.region(region))) return false;
  }
  ProcessGroup* group = strategy_.group();
  if (!group || group->size() == 1) return true;
  // Across processes: compare a 32-bit FNV-1a fingerprint of the bits (a
  // double holds it exactly).
  uint32_t hash = 2166136261u;
  for (const std::vector<float>* values : {&first.trainable(), &first.buffers(), &first.tables()}) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(values->data());
    for (std::size_t i = 0; i < values->size() * sizeof(float); ++i) hash = (hash ^ bytes[i]) * 16777619u;
  }
  auto all = group->all_gather({double(hash)});
  if (!all.ok()) return all.status();
  for (double other : *all)
    if (other != double(hash)) return false;
  return true;
}

Status Trainer::restore(const ModelValues& values, uint64_t optimizer_steps) {
  sync_to_host();  // the slots restore() leaves alone are the card's
  for (ReplicaState& replica : replicas_) {
    ParameterStore& store = replica.model->parameters();
    for (Region region : {Region::kTrainable, Region::kBuffer, Region::kTable})
      if (values.region(region).size() != store.region(region).size())
        return Status(
            StatusCode::kInvalidArgument,
            "checkpoint has " + std::to_string(values.trainable.size()) + " + " +
                std::to_string(values.buffers.size()) + " + " + std::to_string(values.tables.size()) +
                " values, the model " + std::to_string(store.trainable().size()) + " + " +
                std::to_string(store.buffers().size()) + " + " + std::to_string(store.tables().size()));
    // Copied into place: a card's matmul keeps pointers into the regions.
    for (Region region : {Region::kTrainable, Region::kBuffer, Region::kTable})
      std::copy(values.region(region).begin(), values.region(region).end(), store.region(region).begin());
    if (!values.optimizer_state.empty())
      SYSTOLE_RETURN_IF_ERROR(replica.optimizer->restore(values.optimizer_state, optimizer_steps));
  }
  if (card_)
    for (uint32_t r = 0; r < replicas_.size(); ++r) SYSTOLE_RETURN_IF_ERROR(card_->upload(r));
  return ok_status();
}

}  // namespace systole
