// SPDX-License-Identifier: Apache-2.0
#include "systole/run/run.h"

#include <string>
#include <utility>

#include "systole/run/callbacks.h"

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
  return run;
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
