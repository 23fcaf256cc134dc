// SPDX-License-Identifier: Apache-2.0
// Synchronous data-parallel training over replicas.
#include "systole/trainer.h"

#include <algorithm>
#include <cstring>
#include <utility>

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
        {std::move(matmul).value(), std::move(model), std::move(optimizer).value(), {}, {}});
  }
  if (config.placement == Placement::kDevice) SYSTOLE_RETURN_IF_ERROR(trainer->place_on_card(device, units));
  // A modelled board times each replica's thread on its own; they meet
  // where the replicas do.
  trainer->strategy_.set_meeting([device, local](uint32_t) { device.meet_host_threads(local); });
  return trainer;
}

namespace {

// Bytes of `count` floats (the offset of element `count`).
constexpr uint64_t floats(std::size_t count) { return uint64_t(count) * sizeof(float); }

Status upload(Buffer& buffer, const float* values, std::size_t count, uint64_t offset) {
  SYSTOLE_RETURN_IF_ERROR(buffer.write(values, floats(count), offset));
  return buffer.sync(Buffer::SyncDirection::kToDevice, floats(count), offset);
}

Status download(Buffer buffer, float* values, std::size_t count, uint64_t offset) {
  SYSTOLE_RETURN_IF_ERROR(buffer.sync(Buffer::SyncDirection::kFromDevice, floats(count), offset));
  return buffer.read(values, floats(count), offset);
}

// A vector descriptor over elements [begin, begin + n) of the operands at
// `addresses` (x, y, z, w; those the opcode does not use are left zero).
spec::VectorDescriptor vector_op(spec::Opcode op, const spec::VectorScalars& s, std::size_t begin,
                                 std::size_t n, const uint64_t (&addresses)[4]) {
  spec::VectorDescriptor d{};
  d.opcode = uint8_t(op);
  d.flags = s.nesterov ? spec::vector_flag::kNesterov : 0;
  d.n = uint32_t(n);
  const uint32_t scalars = spec::vector_scalar_count(op);
  const float values[4] = {s.alpha, s.beta, s.gamma, s.delta};
  float* fields[4] = {&d.alpha, &d.beta, &d.gamma, &d.delta};
  for (uint32_t i = 0; i < scalars; ++i) *fields[i] = values[i];
  uint64_t* out[4] = {&d.x_addr, &d.y_addr, &d.z_addr, &d.w_addr};
  const spec::VectorOperands operands = spec::vector_operands(op);
  for (int i = 0; i < 4; ++i) *out[i] = operands.uses(i) ? addresses[i] + floats(begin) : 0;
  return d;
}

// y = x: alpha 1, beta +0 (which keeps -0 and reads a subnormal as the
// sum does).
spec::VectorScalars copy_scalars() {
  spec::VectorScalars copy;
  copy.alpha = 1.0f;
  return copy;
}

// Calls add(at, n) for consecutive pieces [at, at + n) of [from, to), each
// as long as one vector descriptor may be.
template <typename Add>
void for_each_piece(std::size_t from, std::size_t to, const Add& add) {
  for (std::size_t at = from; at < to; at += spec::kMaxVectorElements)
    add(at, std::min<std::size_t>(spec::kMaxVectorElements, to - at));
}

}  // namespace

Status Trainer::place_on_card(Device device, const std::vector<uint32_t>& units) {
  const std::size_t count = replicas_[0].model->parameters().trainable().size();
  if (count == 0) return ok_status();  // nothing to keep there
  if (!device.info().has_vector_engine()) {
    notices_.push_back(
        "placement: device: the compute units of this device have no vector engine, so "
        "the parameters stay on the host (placement: host)");
    return ok_status();
  }
  const uint32_t banks = device.info().hbm_banks;
  update_on_card_ = replicas_[0].optimizer->steps_on_engine();
  if (!update_on_card_)
    notices_.push_back("placement: device: optimizer " + config_.optimizer.name +
                       (config_.optimizer.clipnorm > 0 || config_.optimizer.global_clipnorm > 0
                            ? " with gradient clipping"
                            : "") +
                       " has no vector-engine form, so its steps run on the host and move the gradients "
                       "and the weights over the host link each step");
  shared_ = update_on_card_ && replicas_.size() > 1;
  // Across processes, a card's units chain their sum onto the earlier
  // processes' (its first row); one sum per card crosses to the group.
  previous_row_ = shared_ && strategy_.processes() > 1 ? 1 : 0;
  if (previous_row_) job_sum_.resize(count);
  on_card_ = true;
  for (uint32_t r = 0; r < replicas_.size(); ++r) {
    const auto [begin, end] = share(r);
    share_stride_ = std::max(share_stride_, (end - begin + 15) / 16 * 16);
  }
  for (uint32_t r = 0; r < replicas_.size(); ++r) {
    ReplicaState& replica = replicas_[r];
    Card& card = replica.card;
    auto allocate = [&](Buffer& buffer, spec::Operand bank) -> Status {
      auto made = device.allocate(floats(count), spec::operand_bank(units[r], bank, banks));
      if (!made.ok()) return made.status();
      buffer = std::move(made).value();
      return ok_status();
    };
    using spec::Operand;
    SYSTOLE_RETURN_IF_ERROR(allocate(card.values, Operand::kC));
    SYSTOLE_RETURN_IF_ERROR(allocate(card.gradient, Operand::kA));
    if (shared_) {
      auto rows = device.allocate(floats(share_stride_ * (previous_row_ + replicas_.size())),
                                  spec::operand_bank(units[r], Operand::kCommands, banks));
      if (!rows.ok()) return rows.status();
      card.rows = std::move(rows).value();
    }
    const Operand slot_banks[] = {Operand::kB, Operand::kCommands};
    std::size_t k = 0;
    if (update_on_card_)
      for (const OptimizerSlot& slot : replica.optimizer->state())
        if (slot.region == Region::kTrainable)
          SYSTOLE_RETURN_IF_ERROR(allocate(card.slots.emplace_back(), slot_banks[k++ % 2]));
    ParameterStore& store = replica.model->parameters();
    ResidentParameters resident;
    resident.values = store.trainable().data();
    resident.gradients = store.gradients().data();
    resident.count = count;
    resident.values_buffer = card.values;
    resident.gradient_buffer = card.gradient;
    replica.matmul->keep_resident(resident);
    SYSTOLE_RETURN_IF_ERROR(upload_card(r));
  }
  return ok_status();
}

std::pair<std::size_t, std::size_t> Trainer::share(uint32_t r) const {
  const std::size_t count = replicas_[0].model->parameters().trainable().size();
  if (!shared_) return {0, count};
  // Whole 64-byte beats, but for the last share's end.
  const std::size_t n = replicas_.size();
  auto edge = [&](std::size_t q) { return std::min(count, count * q / n / 16 * 16); };
  return {edge(r), r + 1 == n ? count : edge(r + 1)};
}

Status Trainer::upload_card(uint32_t r) {
  ReplicaState& replica = replicas_[r];
  const std::vector<float>& values = replica.model->parameters().trainable();
  SYSTOLE_RETURN_IF_ERROR(upload(replica.card.values, values.data(), values.size(), 0));
  std::size_t k = 0;
  for (const OptimizerSlot& slot : replica.optimizer->state())
    if (slot.region == Region::kTrainable && k < replica.card.slots.size())
      SYSTOLE_RETURN_IF_ERROR(upload(replica.card.slots[k++], slot.values->data(), slot.values->size(), 0));
  replica.matmul->values_changed();
  return ok_status();
}

void Trainer::append_card_sum(uint32_t r, std::size_t from, std::size_t to, bool after_previous,
                              std::vector<spec::VectorDescriptor>& work) const {
  // Replica r's rows hold its share of every replica's gradients (after the
  // row of the earlier processes' sum, when there is one), replica
  // r + k's copied in the k-th copy, so that each unit's gradients are read
  // by one unit at a time.
  const std::size_t first = share(r).first;
  const uint64_t rows = replicas_[r].card.rows.address();
  const uint32_t n_rows = uint32_t(replicas_.size());
  for_each_piece(from, to, [&](std::size_t at, std::size_t n) {
    const uint64_t row0 = rows + floats(at - first);
    for (uint32_t k = 0; k < n_rows; ++k) {
      const uint32_t q = (r + k) % n_rows;
      spec::VectorDescriptor gather = vector_op(spec::Opcode::kAxpby, copy_scalars(), at, n,
                                                {replicas_[q].card.gradient.address(), 0, 0, 0});
      gather.y_addr = row0 + floats((previous_row_ + q) * share_stride_);
      work.push_back(gather);
    }
    // Into its own gradients' share, which only this unit reads, and only
    // in the copies above.
    spec::VectorDescriptor sum =
        vector_op(spec::Opcode::kSum, {}, at, n, {0, 0, replicas_[r].card.gradient.address(), 0});
    sum.x_addr = row0 + (after_previous ? 0 : floats(previous_row_ * share_stride_));
    sum.rows = n_rows + (after_previous ? 1 : 0);
    sum.stride = uint32_t(share_stride_);
    work.push_back(sum);
  });
}

Status Trainer::step_on_card(uint32_t r) {
  ReplicaState& replica = replicas_[r];
  ParameterStore& store = replica.model->parameters();
  DeviceMatmul& unit = *replica.matmul;
  Card& card = replica.card;
  const std::size_t count = store.trainable().size();
  // The gradients the host wrote (host layers') go up beside the
  // products'.
  for (const auto& [begin, end] : unit.card_written().gaps(count))
    SYSTOLE_RETURN_IF_ERROR(
        upload(card.gradient, store.gradients().data() + begin, end - begin, floats(begin)));
  unit.clear_written();
  Optimizer& optimizer = *replica.optimizer;
  // One replica per card across processes: its gradient goes to the host's
  // all-reduce (one down, one up, fewer than a chain through the card).
  const bool host_sum = strategy_.processes() > 1 && !shared_;
  if (!update_on_card_ || host_sum) {
    // The gradients cross to the host's all-reduce (the job's order over
    // every replica of every process, in the engine's arithmetic) and the
    // sum comes back; or, for an optimizer without an engine form, the
    // host updates and the new values go up.
    SYSTOLE_RETURN_IF_ERROR(download(card.gradient, store.gradients().data(), count, 0));
    SYSTOLE_RETURN_IF_ERROR(strategy_.all_reduce_sum(r, store.gradients()));
    if (!update_on_card_) {
      SYSTOLE_RETURN_IF_ERROR(download(card.values, store.trainable().data(), count, 0));
      optimizer.apply(store);
      SYSTOLE_RETURN_IF_ERROR(upload(card.values, store.trainable().data(), count, 0));
    } else {
      SYSTOLE_RETURN_IF_ERROR(upload(card.gradient, store.gradients().data(), count, 0));
    }
  }
  if (update_on_card_) {
    // Each replica sums its share of every replica's gradients, in replica
    // order (the all-reduce's ((+0 + g_0) + g_1) + ...), and updates that
    // share of the values. (Not a structured binding: a lambda below
    // captures begin and end.)
    const std::pair<std::size_t, std::size_t> mine = share(r);
    const std::size_t begin = mine.first, end = mine.second;
    std::vector<spec::VectorDescriptor> work;
    const uint64_t gradient = card.gradient.address();
    if (shared_ && previous_row_) {
      // Across processes the card's sum continues the earlier processes':
      // their sum goes up into each unit's first row, each unit sums its
      // share after it, and the card's sum goes down and on to the next
      // process (ProcessGroup::chained_sum). The job's sum comes back into
      // each unit's share, except on the last process, whose units
      // computed it.
      const ProcessGroup::AddTerms add = [&](const float* previous, std::size_t from, std::size_t to,
                                             float* total) -> Status {
        const std::size_t b = std::max(begin, from), e = std::min(end, to);
        if (b >= e) return ok_status();
        if (previous) SYSTOLE_RETURN_IF_ERROR(upload(card.rows, previous + b, e - b, floats(b - begin)));
        std::vector<spec::VectorDescriptor> sum;
        append_card_sum(r, b, e, previous != nullptr, sum);
        SYSTOLE_RETURN_IF_ERROR(unit.run_vector(sum));
        return download(card.gradient, total + b, e - b, floats(b));
      };
      SYSTOLE_RETURN_IF_ERROR(strategy_.chained_sum(r, count, count, add, job_sum_.data()));
      const ProcessGroup& group = *strategy_.group();
      if (group.rank() + 1 < group.size())
        SYSTOLE_RETURN_IF_ERROR(upload(card.gradient, job_sum_.data() + begin, end - begin, floats(begin)));
    } else if (shared_) {
      SYSTOLE_RETURN_IF_ERROR(strategy_.barrier(r));  // every replica's gradients are in
      append_card_sum(r, begin, end, false, work);
    }
    const Optimizer::EngineStep step = optimizer.take_engine_step();
    uint64_t update[4] = {gradient, 0, 0, 0};
    std::size_t k = 1;
    for (const Buffer& slot : card.slots) update[k++] = slot.address();
    const uint64_t values = card.values.address();
    update[k] = values;
    for_each_piece(begin, end, [&](std::size_t at, std::size_t n) {
      if (step.decay_alpha != 0) {
        spec::VectorScalars shrink;
        shrink.alpha = step.decay_alpha;
        shrink.beta = 1.0f;
        work.push_back(vector_op(spec::Opcode::kAxpby, shrink, at, n, {values, values, 0, 0}));
      }
      work.push_back(vector_op(step.update.opcode, step.update.scalars, at, n, update));
    });
    SYSTOLE_RETURN_IF_ERROR(unit.run_vector(work));
    if (shared_) {
      // Then the others' shares of the values, copied from their units,
      // replica r + k's in the k-th copy (one reader per unit at a time).
      SYSTOLE_RETURN_IF_ERROR(strategy_.barrier(r));
      work.clear();
      const uint32_t n_rows = uint32_t(replicas_.size());
      for (uint32_t k = 1; k < n_rows; ++k) {
        const uint32_t q = (r + k) % n_rows;
        const auto [from, to] = share(q);
        for_each_piece(from, to, [&](std::size_t at, std::size_t n) {
          work.push_back(vector_op(spec::Opcode::kAxpby, copy_scalars(), at, n,
                                   {replicas_[q].card.values.address(), values, 0, 0}));
        });
      }
      if (!work.empty()) SYSTOLE_RETURN_IF_ERROR(unit.run_vector(work));
    }
    optimizer.apply_tables(store);
    host_behind_ = true;
  }
  unit.values_changed();
  // What host layers read of the values comes back (the rest only when
  // asked for).
  for (const auto& [begin, end] : unit.card_read().gaps(count))
    SYSTOLE_RETURN_IF_ERROR(
        download(card.values, store.trainable().data() + begin, end - begin, floats(begin)));
  return ok_status();
}

void Trainer::sync_to_host() const {
  if (!host_behind_) return;
  host_behind_ = false;
  // Each share of a slot from the replica that updates it.
  std::vector<std::pair<std::string, std::vector<float>>> slots;
  Status status;
  std::size_t k = 0;
  for (const OptimizerSlot& slot : replicas_[0].optimizer->state()) {
    slots.push_back({slot.name, *slot.values});
    if (slot.region != Region::kTrainable || k >= replicas_[0].card.slots.size()) continue;
    for (uint32_t q = 0; q < replicas_.size() && status.ok(); ++q) {
      const auto [begin, end] = share(q);
      status = download(replicas_[q].card.slots[k], slots.back().second.data() + begin, end - begin,
                        floats(begin));
    }
    ++k;
  }
  for (const ReplicaState& replica : replicas_) {
    ParameterStore& store = replica.model->parameters();
    if (status.ok())
      status = download(replica.card.values, store.trainable().data(), store.trainable().size(), 0);
    if (status.ok()) status = replica.optimizer->restore(slots, replica.optimizer->steps());
    if (!status.ok() && sync_status_.ok())
      sync_status_ = Status(status.code(), "bringing the parameters from the card: " + status.message());
  }
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
  if (!sync_status_.ok()) return std::exchange(sync_status_, ok_status());
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
    if (on_card_) {
      // placement: device: the reduction and the update run on the card
      // (their launches count as the optimizer's time).
      TraceScope span("optimizer", "device", track);
      SYSTOLE_RETURN_IF_ERROR(step_on_card(r));
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
  if (on_card_)
    for (uint32_t r = 0; r < replicas_.size(); ++r) SYSTOLE_RETURN_IF_ERROR(upload_card(r));
  return ok_status();
}

}  // namespace systole
