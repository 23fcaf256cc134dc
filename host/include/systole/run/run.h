// SPDX-License-Identifier: Apache-2.0
// A run: what a config describes, opened. Its data (the config's data
// section, or examples the caller brings), its device and compute units,
// the training batches cut per replica, and the trainer built on them (from
// model.initial_weights when the config names a file). accel_train,
// systole.Model and programs of their own open a run the same way, then
// train it with fit(), the config's callbacks and their own.
#pragma once

#include <cstdint>
#include <memory>

#include "systole/callbacks.h"
#include "systole/dataset.h"
#include "systole/fit.h"
#include "systole/process_group.h"
#include "systole/run/config.h"
#include "systole/run/data.h"
#include "systole/run/device.h"
#include "systole/trainer.h"

namespace systole {

struct RunOptions {
  ProcessGroup* group = nullptr;  // under mpirun: this process's job
  // The training examples instead of the config's data section (NumPy
  // arrays given to systole.Model.fit), or the config's data already loaded
  // (a systole.RecordDataset); neither: the config's data, loaded by open.
  std::shared_ptr<const Dataset> examples;
  std::shared_ptr<const RunData> data;
  // false: no training batches (a run opened to evaluate or predict; with
  // `examples` of no examples, only their shape and classes build it).
  bool batches = true;
};

class TrainingRun {
 public:
  // Checks the config, loads the data (a bad data set is reported before
  // any device work), opens the device and selects its units, cuts the
  // training batches for this process's replicas, and builds the trainer;
  // the learning-rate schedule spans the batches' epochs.
  static Result<std::unique_ptr<TrainingRun>> open(const RunConfig& config, RunOptions options = {});

  const RunConfig& config() const { return config_; }
  Trainer& trainer() { return *trainer_; }
  const Trainer& trainer() const { return *trainer_; }
  const OpenedDevice& device() const { return device_; }
  // The config's data; null when the caller brought examples.
  const RunData* data() const { return data_.get(); }
  // The training batches of this process's replicas; null without.
  BatchSource* batches() { return batches_.get(); }
  // Whether this process leads (logs and writes files): rank 0 of a job,
  // or the only process.
  bool lead() const { return !group_ || group_->rank() == 0; }
  ProcessGroup* group() const { return group_; }

  // The callbacks the config names (callbacks.*, checkpoint.*,
  // tensorboard; systole/run/callbacks.h): `validation` says whether fit
  // gets a validation set, `first_epoch` how many epochs a resume skips.
  Result<Callbacks> config_callbacks(bool interactive, bool validation, uint32_t first_epoch);
  // Their ModelCheckpoint; null without checkpoint.dir (or before).
  const std::shared_ptr<ModelCheckpoint>& checkpoints() const { return checkpoints_; }
  // fit's options as the config sets them: train.epochs and
  // steps_per_epoch, the data's validation set (if it has one), whether
  // this process leads.
  FitOptions fit_options() const;

  // Trains on other data with the same trainer (a later systole.Model.fit):
  // `examples`, or `data`'s batches, replace the run's.
  Status use_batches(std::shared_ptr<const Dataset> examples, std::shared_ptr<const RunData> data);

 private:
  TrainingRun(RunConfig config, ProcessGroup* group) : config_(std::move(config)), group_(group) {}

  // The batches of `examples` (all replicas step through the same global
  // batches) or of `data` (IDX: the same; TFRecord: one pipeline per local
  // replica, reading its shard).
  Result<std::unique_ptr<BatchSource>> make_batches(const Dataset* examples, const RunData* data) const;

  RunConfig config_;
  ProcessGroup* group_;
  std::shared_ptr<const RunData> data_;
  std::shared_ptr<const Dataset> examples_;
  OpenedDevice device_;
  std::unique_ptr<BatchSource> batches_;
  std::unique_ptr<Trainer> trainer_;
  std::shared_ptr<ModelCheckpoint> checkpoints_;
};

}  // namespace systole
