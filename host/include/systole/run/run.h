// SPDX-License-Identifier: Apache-2.0
// A run: what a config describes, opened. Its data (the config's data
// section, or examples the caller brings), its device and compute units,
// the training batches cut per replica, the trainer built on them (from
// model.initial_weights when the config names a file), its checkpoint
// directory locked and, with checkpoint.resume, the trainer restored from
// it. accel_train, systole.Model and programs of their own open a run the
// same way, then train it with TrainingRun::fit, the config's callbacks and
// their own.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "systole/callbacks.h"
#include "systole/dataset.h"
#include "systole/fit.h"
#include "systole/output_file.h"
#include "systole/process_group.h"
#include "systole/run/config.h"
#include "systole/run/data.h"
#include "systole/run/device.h"
#include "systole/run/retrace.h"
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
  // Who holds the checkpoint directory's lock, as a second run on it reads
  // ("accel_train" gives "accel_train pid 123 on host h").
  std::string program = "systole";
};

class TrainingRun {
 public:
  // Checks the config, loads the data (a bad data set is reported before
  // any device work), opens the device and selects its units, cuts the
  // training batches for this process's replicas, and builds the trainer;
  // the learning-rate schedule spans the batches' epochs. Then it locks
  // checkpoint.dir on the lead (a second run on it would
  // interleave its checkpoints with this one's; created unless resuming
  // from a directory that does not exist, which fails creating nothing)
  // and, with checkpoint.resume, restores the trainer from its checkpoint.
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

  // The epochs the resumed checkpoint had done (0 without a resume); fit
  // starts after them.
  uint32_t first_epoch() const { return first_epoch_; }
  // What opening did that the user should hear of, one line each: the
  // partial writes of a killed run it removed from checkpoint.dir, the
  // checkpoint it resumed from.
  const std::vector<std::string>& notices() const { return notices_; }

  // The callbacks the config names (callbacks.*, checkpoint.*,
  // tensorboard; systole/run/callbacks.h): `validation` says whether fit
  // gets a validation set, `first_epoch` how many epochs are done before it.
  Result<Callbacks> config_callbacks(bool interactive, bool validation, uint32_t first_epoch);
  // Their ModelCheckpoint; null without checkpoint.dir (or before).
  const std::shared_ptr<ModelCheckpoint>& checkpoints() const { return checkpoints_; }
  // fit's options as the config sets them: train.epochs and
  // steps_per_epoch, the data's validation set (if it has one), whether
  // this process leads; after a resume, the first fit's initial epoch is
  // the checkpoint's (later fits start from 0).
  FitOptions fit_options() const;

  // fit() of the run's trainer on its batches. With `retrace` in the config
  // the first fit writes the retrace dump (systole/run/retrace.h): its
  // weights before the first step, the batches it trained on and the
  // evaluation sets (options.validation_data, the data's test set); a later
  // fit of the same run is refused, as the dump would no longer retrace it.
  Result<History> fit(const FitOptions& options, Callbacks& callbacks);
  // The training examples the retrace dump holds (0 before a fit wrote it).
  uint64_t retraced_examples() const { return retraced_examples_; }

  // Trains on other data with the same trainer (a later systole.Model.fit):
  // `examples`, or `data`'s batches, replace the run's.
  Status use_batches(std::shared_ptr<const Dataset> examples, std::shared_ptr<const RunData> data);

 private:
  TrainingRun(RunConfig config, ProcessGroup* group) : config_(std::move(config)), group_(group) {}

  // The batches of `examples` (all replicas step through the same global
  // batches) or of `data` (IDX: the same; TFRecord: one pipeline per local
  // replica, reading its shard).
  Result<std::unique_ptr<BatchSource>> make_batches(const Dataset* examples, const RunData* data) const;

  // The lock on checkpoint.dir, and the resume (open's last steps).
  Status resume(const std::string& program);

  RunConfig config_;
  ProcessGroup* group_;
  std::shared_ptr<const RunData> data_;
  std::shared_ptr<const Dataset> examples_;
  OpenedDevice device_;
  std::unique_ptr<BatchSource> batches_;
  std::unique_ptr<Trainer> trainer_;
  std::shared_ptr<ModelCheckpoint> checkpoints_;
  std::optional<DirectoryLock> lock_;
  uint32_t first_epoch_ = 0;
  std::vector<std::string> notices_;
  uint32_t fits_ = 0;
  uint64_t retraced_examples_ = 0;
};

}  // namespace systole
