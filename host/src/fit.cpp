// SPDX-License-Identifier: Apache-2.0
// fit, evaluate and predict: the loops around Trainer's steps.
#include "systole/fit.h"

#include <algorithm>
#include <chrono>

#include "systole/fault_points.h"
#include "systole/trace.h"

namespace systole {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point begin, Clock::time_point end) {
  return std::chrono::duration<double>(end - begin).count();
}

// Runs `hook` on every callback in order; the first error ends the call.
template <class Hook>
Status for_each(const Callbacks& callbacks, Hook hook) {
  for (const auto& callback : callbacks) SYSTOLE_RETURN_IF_ERROR(hook(*callback));
  return ok_status();
}

void prepare(const Callbacks& callbacks, Trainer& trainer, const CallbackParams& params) {
  for (const auto& callback : callbacks) {
    callback->set_trainer(&trainer);
    callback->set_params(params);
    callback->clear_stop_training();
  }
}

Logs result_logs(const Trainer& trainer, const StepResult& result) {
  Logs logs;
  for (const auto& [name, value] : trainer.results(result)) logs[name] = value;
  return logs;
}

}  // namespace

std::optional<double> log_value(const Logs& logs, const std::string& key) {
  const auto it = logs.find(key);
  if (it == logs.end()) return std::nullopt;
  return it->second;
}

ArraySource::ArraySource(const Dataset& data, uint32_t global_batch, uint64_t seed, bool shuffle)
    : data_(data), global_batch_(global_batch), seed_(seed), shuffle_(shuffle) {}

ArraySource::~ArraySource() = default;

uint64_t ArraySource::batches_per_epoch() const { return global_batch_ ? data_.examples / global_batch_ : 0; }

Status ArraySource::start_epoch(uint32_t epoch) {
  if (global_batch_ == 0) return Status(StatusCode::kInvalidArgument, "a batch size of 0");
  stream_.reset();  // its thread ends before the next starts
  stream_ = std::make_unique<BatchStream>(data_, global_batch_, seed_, epoch, shuffle_);
  return ok_status();
}

Result<bool> ArraySource::next(Batch& batch) {
  if (!stream_) return Status(StatusCode::kInvalidArgument, "next() before start_epoch()");
  return stream_->next(batch);
}

Result<std::unique_ptr<PipelineSource>> PipelineSource::per_replica(const RecordPipeline& plan,
                                                                    uint32_t first, uint32_t local,
                                                                    uint32_t total, uint32_t per_replica,
                                                                    uint32_t shuffle_buffer) {
  if (local == 0 || first + uint64_t(local) > total)
    return Status(StatusCode::kInvalidArgument, "replicas " + std::to_string(first) + ".." +
                                                    std::to_string(first + uint64_t(local)) + " of " +
                                                    std::to_string(total) + " do not exist");
  std::vector<std::unique_ptr<RecordPipeline>> replicas;
  for (uint32_t r = first; r < first + local; ++r) {
    auto shard = plan.shard(r, total, per_replica, shuffle_buffer);
    if (!shard.ok()) return shard.status();
    if ((*shard)->batches_per_epoch() == 0)
      return Status(StatusCode::kInvalidArgument,
                    "a batch of " + std::to_string(per_replica) + " per replica is more than the " +
                        std::to_string((*shard)->shard_records()) + " training record(s) of replica " +
                        std::to_string(r) + "'s shard (of " + std::to_string(total) +
                        "): no batch to train on");
    replicas.push_back(std::move(shard).value());
  }
  return std::unique_ptr<PipelineSource>(new PipelineSource(std::move(replicas)));
}

Status PipelineSource::start_epoch(uint32_t epoch) {
  for (auto& replica : replicas_) replica->start_epoch(epoch);
  return ok_status();
}

Result<bool> PipelineSource::next(Batch& batch) {
  if (replicas_.size() == 1) return replicas_.front()->next(batch);
  batch.values.clear();
  batch.labels.clear();
  batch.size = 0;
  for (auto& replica : replicas_) {
    Result<bool> more = replica->next(part_);
    if (!more.ok() || !*more) return more;
    batch.values.insert(batch.values.end(), part_.values.begin(), part_.values.end());
    batch.labels.insert(batch.labels.end(), part_.labels.begin(), part_.labels.end());
    batch.size += part_.size;
    batch.label_width = part_.label_width;
  }
  return true;
}

uint64_t PipelineSource::skipped() const {
  // Shards by record all read (and skip) every record of every file.
  if (!replicas_.front()->shards_by_file()) return replicas_.front()->skipped();
  uint64_t skipped = 0;
  for (const auto& replica : replicas_) skipped += replica->skipped();
  return skipped;
}

std::string PipelineSource::shortfall() const {
  for (const auto& replica : replicas_)
    if (replica->skipped() > 0)
      return std::to_string(skipped()) +
             " corrupt record(s) skipped, the first: " + replica->first_skip_reason();
  return "no record skipped";
}

Result<History> fit(Trainer& trainer, BatchSource& train, const FitOptions& options,
                    const Callbacks& callbacks) {
  const uint64_t available = train.batches_per_epoch();
  const uint64_t steps =
      options.steps_per_epoch ? std::min<uint64_t>(options.steps_per_epoch, available) : available;
  if (steps == 0)
    return Status(StatusCode::kInvalidArgument, "the training data holds no full batch of " +
                                                    std::to_string(trainer.config().global_batch) +
                                                    " examples");
  if (options.validation_freq == 0)
    return Status(StatusCode::kInvalidArgument, "validation_freq: 0 (validate every N-th epoch, N >= 1)");
  CallbackParams params;
  params.epochs = options.epochs;
  params.steps = steps;
  params.validation = options.validation_data && options.validation_data->examples > 0;
  params.lead = options.lead;
  prepare(callbacks, trainer, params);

  History history;
  const StepTimes times_before = trainer.step_times();
  Trace* trace = Trace::installed();
  SYSTOLE_RETURN_IF_ERROR(for_each(callbacks, [](Callback& c) { return c.on_train_begin({}); }));
  for (uint32_t epoch = options.initial_epoch; epoch < options.epochs; ++epoch) {
    SYSTOLE_RETURN_IF_ERROR(for_each(callbacks, [&](Callback& c) { return c.on_epoch_begin(epoch, {}); }));
    SYSTOLE_RETURN_IF_ERROR(train.start_epoch(epoch));
    const auto start = Clock::now();
    const uint64_t launches_before = trainer.launches();
    StepResult total;  // the epoch's so far
    uint64_t batch_index = 0;
    Batch batch;
    while (batch_index < steps) {
      const auto asked = Clock::now();
      Result<bool> more = train.next(batch);
      const auto got = Clock::now();
      history.input_wait_seconds += seconds_between(asked, got);
      if (trace) trace->span("data wait", "host", Trace::kHostTrack, asked, got);
      if (!more.ok()) return more.status();
      if (!*more)
        return Status(StatusCode::kDataLoss, "the training data ended after " + std::to_string(batch_index) +
                                                 " of " + std::to_string(steps) + " batches of epoch " +
                                                 std::to_string(epoch + 1) + ": " + train.shortfall());
      SYSTOLE_RETURN_IF_ERROR(
          for_each(callbacks, [&](Callback& c) { return c.on_train_batch_begin(batch_index, {}); }));
      auto result = train.process_share() ? trainer.step_local(batch) : trainer.step(batch);
      if (trace)
        trace->span("step", "host", Trace::kHostTrack, got, Clock::now(),
                    {{"step", double(trainer.optimizer().steps())}, {"examples", double(batch.size)}});
      if (!result.ok()) return result.status();
      total += *result;
      const Logs batch_logs = result_logs(trainer, total);
      SYSTOLE_RETURN_IF_ERROR(
          for_each(callbacks, [&](Callback& c) { return c.on_train_batch_end(batch_index, batch_logs); }));
      ++batch_index;
      SYSTOLE_RETURN_IF_ERROR(fault_point(FaultPoint::kTrainStep));
      if (options.interrupt) {
        auto interrupted = options.interrupt();
        if (!interrupted.ok()) return interrupted.status();
        if (*interrupted) {
          history.interrupted = *interrupted;
          history.interrupted_epoch = epoch;
          history.interrupted_batch = batch_index;
          history.interrupted_batches = steps;
          history.step_times = trainer.step_times().since(times_before);
          return history;
        }
      }
    }
    history.seconds += seconds_between(start, Clock::now());
    history.launches_per_step = double(trainer.launches() - launches_before) / steps;
    history.step_times = trainer.step_times().since(times_before);
    history.examples += total.examples;
    history.steps += steps;

    Logs logs = result_logs(trainer, total);
    logs["learning_rate"] = trainer.optimizer().learning_rate();
    if (params.validation && (epoch + 1 - options.initial_epoch) % options.validation_freq == 0) {
      Result<Logs> validated = Status(StatusCode::kInternal, "not validated");
      {
        TraceScope span("validation", "host", Trace::kHostTrack);
        validated = evaluate(trainer, *options.validation_data, callbacks);
      }
      if (!validated.ok()) return validated.status();
      for (const auto& [name, value] : *validated) logs["val_" + name] = value;
    }
    // The replicas must hold the same bits after every epoch; if they do
    // not, the runtime has a bug, and no checkpoint of it is written.
    auto identical = trainer.replicas_identical();
    if (!identical.ok()) return identical.status();
    if (!*identical)
      return Status(StatusCode::kInternal, "replicas diverged (a bug: they must hold the same bits)");
    SYSTOLE_RETURN_IF_ERROR(for_each(callbacks, [&](Callback& c) { return c.on_epoch_end(epoch, logs); }));
    history.epochs.push_back(epoch);
    for (const auto& [name, value] : logs) history.history[name].push_back(value);
    const bool stop = std::any_of(callbacks.begin(), callbacks.end(),
                                  [](const auto& c) { return c->stop_training_requested(); });
    if (stop) {
      history.stopped_early = true;
      break;
    }
  }
  Logs last;
  for (const auto& [name, values] : history.history) last[name] = values.back();
  SYSTOLE_RETURN_IF_ERROR(for_each(callbacks, [&](Callback& c) { return c.on_train_end(last); }));
  return history;
}

Result<Logs> evaluate(Trainer& trainer, const Dataset& data, const Callbacks& callbacks) {
  // Only the trainer: inside fit, its callbacks keep fit's params.
  for (const auto& callback : callbacks) callback->set_trainer(&trainer);
  SYSTOLE_RETURN_IF_ERROR(for_each(callbacks, [](Callback& c) { return c.on_test_begin({}); }));
  auto result = trainer.evaluate(data);
  if (!result.ok()) return result.status();
  if (result->examples == 0) return Status(StatusCode::kInvalidArgument, "evaluate: the data set is empty");
  const Logs logs = result_logs(trainer, *result);
  SYSTOLE_RETURN_IF_ERROR(for_each(callbacks, [&](Callback& c) { return c.on_test_end(logs); }));
  return logs;
}

Result<std::vector<float>> predict(Trainer& trainer, const float* inputs, uint32_t count,
                                   const Callbacks& callbacks) {
  const uint32_t batch = trainer.per_replica_batch() * trainer.config().steps_per_execution;
  const std::size_t features = shape_elements(trainer.config().model.input_shape);
  CallbackParams params;
  params.steps = (uint64_t(count) + batch - 1) / batch;
  prepare(callbacks, trainer, params);
  SYSTOLE_RETURN_IF_ERROR(for_each(callbacks, [](Callback& c) { return c.on_predict_begin({}); }));
  std::vector<float> logits;
  for (uint64_t index = 0; index < params.steps; ++index) {
    const uint32_t at = uint32_t(index * batch), size = std::min(batch, count - at);
    const Logs batch_logs = {{"examples", double(size)}};
    SYSTOLE_RETURN_IF_ERROR(
        for_each(callbacks, [&](Callback& c) { return c.on_predict_batch_begin(index, batch_logs); }));
    auto part = trainer.predict(inputs + std::size_t(at) * features, size);
    if (!part.ok()) return part.status();
    logits.insert(logits.end(), part->begin(), part->end());
    SYSTOLE_RETURN_IF_ERROR(
        for_each(callbacks, [&](Callback& c) { return c.on_predict_batch_end(index, batch_logs); }));
  }
  SYSTOLE_RETURN_IF_ERROR(for_each(callbacks, [](Callback& c) { return c.on_predict_end({}); }));
  return logits;
}

}  // namespace systole
