// SPDX-License-Identifier: Apache-2.0
#include "systole/run/run.h"

#include <unistd.h>

#include <filesystem>
#include <string>
#include <utility>

#include "systole/run/callbacks.h"
#include "systole/training_checkpoint.h"

namespace systole {

Result<std::unique_ptr<TrainingRun>> TrainingRun::open(const RunConfig& config, RunOptions options) {
  SYSTOLE_RETURN_IF_ERROR(validate_run_config(config));
  auto array = parse_array_shape(config.array);
  if (!array.ok()) return Status(array.status().code(), "array: " + array.status().message());
  std::unique_ptr<TrainingRun> run(new TrainingRun(config, options.group));
  run->examples_ = std::move(options.examples);
  run->data_ = std::move(options.data);
  // Data first: a bad data set is reported before any device work.
  if (!run->examples_ && !run->data_) {
    auto loaded = load_run_data(config);
    if (!loaded.ok()) return loaded.status();
    run->data_ = std::make_shared<const RunData>(std::move(loaded).value());
  }
  const Dataset& shape_of = run->examples_ ? *run->examples_ : run->data_->shape_of;
  // Examples a caller brings carry classes only when their labels are
  // class indices.
  if (run->examples_ && shape_of.classes == 0 && config.classes == 0)
    return Status(StatusCode::kInvalidArgument,
                  "model.classes: required when the labels are not class indices");
  auto opened = open_device(config, *array, options.group);
  if (!opened.ok()) return opened.status();
  run->device_ = std::move(opened).value();
  if (options.batches) {
    auto batches = run->make_batches(run->examples_.get(), run->data_.get());
    if (!batches.ok()) return batches.status();
    run->batches_ = std::move(batches).value();
  }
  auto spec = model_spec(config, shape_of);
  if (!spec.ok()) return spec.status();
  auto settings = trainer_settings(config, *spec, run->batches_ ? run->batches_->batches_per_epoch() : 0);
  if (!settings.ok()) return settings.status();
  auto trainer = make_trainer(config, run->device_, *settings, options.group);
  if (!trainer.ok()) return trainer.status();
  run->trainer_ = std::move(trainer).value();
  SYSTOLE_RETURN_IF_ERROR(run->resume(options.program));
  return run;
}

Status TrainingRun::resume(const std::string& program) {
  const std::string& dir = config_.checkpoint_dir;
  std::error_code missing;
  if (lead() && !dir.empty() && !(config_.resume && !std::filesystem::exists(dir, missing))) {
    std::error_code error;
    std::filesystem::create_directories(dir, error);
    if (error)
      return Status(StatusCode::kUnavailable,
                    "checkpoint.dir: cannot create '" + dir + "': " + error.message());
    char host[256] = "?";
    gethostname(host, sizeof host - 1);
    auto lock =
        DirectoryLock::acquire(dir, program + " pid " + std::to_string(getpid()) + " on host " + host);
    if (!lock.ok()) return lock.status();
    for (const std::string& name : lock->removed_temporaries())
      notices_.push_back("removed " + dir + "/" + name + ", a partial write of a run that was killed");
    lock_.emplace(std::move(lock).value());
  }
  if (!config_.resume) return ok_status();
  const std::string path = checkpoint_file(dir);
  auto done = resume_from(path, *trainer_);
  if (!done.ok()) return done.status();
  first_epoch_ = *done;
  notices_.push_back("resumed from " + path + " after epoch " + std::to_string(first_epoch_));
  return ok_status();
}

Result<History> TrainingRun::fit(const FitOptions& options, Callbacks& callbacks) {
  if (!batches_)
    return Status(StatusCode::kInvalidArgument, "fit: the run was opened without training batches");
  const bool retrace = !config_.retrace_dir.empty();
  if (retrace && fits_ > 0)
    return Status(StatusCode::kInvalidArgument,
                  "retrace: the dump in '" + config_.retrace_dir +
                      "' retraces this run's first fit; a second fit would not be in it");
  ++fits_;
  if (!retrace) return systole::fit(*trainer_, *batches_, options, callbacks);
  if (group_) return Status(StatusCode::kInvalidArgument, "retrace: one process only (not under mpirun)");
  SYSTOLE_RETURN_IF_ERROR(start_retrace(config_.retrace_dir, *trainer_));
  RetraceSource source(*batches_);
  source.set_shape(examples_ ? examples_->shape : data_->shape_of.shape);
  auto history = systole::fit(*trainer_, source, options, callbacks);
  if (!history.ok() || history->interrupted) return history;
  const Dataset none;
  const Status dumped =
      finish_retrace(config_.retrace_dir, source.batches(),
                     options.validation_data ? *options.validation_data : none, data_ ? data_->test : none);
  if (!dumped.ok()) return Status(dumped.code(), "retrace: " + dumped.message());
  retraced_examples_ = source.batches().examples;
  return history;
}

Result<Callbacks> TrainingRun::config_callbacks(bool interactive, bool validation, uint32_t first_epoch) {
  return make_callbacks(config_, lead(), interactive, validation, first_epoch, checkpoints_);
}

FitOptions TrainingRun::fit_options() const {
  FitOptions options;
  options.epochs = config_.epochs;
  options.steps_per_epoch = config_.steps_per_epoch;
  options.validation_data = data_ && data_->validation.examples > 0 ? &data_->validation : nullptr;
  options.lead = lead();
  options.initial_epoch = fits_ == 0 ? first_epoch_ : 0;
  return options;
}

Status TrainingRun::use_batches(std::shared_ptr<const Dataset> examples,
                                std::shared_ptr<const RunData> data) {
  auto batches = make_batches(examples.get(), data.get());
  if (!batches.ok()) return batches.status();
  // The old batches may read the old data: replaced in this order.
  batches_ = std::move(batches).value();
  examples_ = std::move(examples);
  data_ = std::move(data);
  return ok_status();
}

Result<std::unique_ptr<BatchSource>> TrainingRun::make_batches(const Dataset* examples,
                                                               const RunData* data) const {
  if (examples) {
    if (examples->examples < config_.global_batch)
      return Status(StatusCode::kInvalidArgument,
                    "train.global_batch: " + std::to_string(config_.global_batch) + " is more than the " +
                        std::to_string(examples->examples) + " training examples");
    return std::unique_ptr<BatchSource>(
        std::make_unique<ArraySource>(*examples, config_.global_batch, config_.seed));
  }
  if (!data) return Status(StatusCode::kInvalidArgument, "fit: no training data");
  const uint32_t local = uint32_t(device_.units.size()), processes = group_ ? group_->size() : 1;
  return train_source(*data, config_, (group_ ? group_->rank() : 0) * local, local, processes * local);
}

}  // namespace systole
