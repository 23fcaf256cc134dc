// SPDX-License-Identifier: Apache-2.0
// accel_train's callbacks, with Keras' semantics: what runs after each
// batch and each epoch of the fit loop (EarlyStopping, ModelCheckpoint,
// CSVLogger, TensorBoard, TerminateOnNaN). Every rank of a job runs the
// callbacks that decide (their inputs are the job's totals, so the ranks
// agree); only rank 0 runs those that write files.
#pragma once

#include <cstdint>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "systole/checkpoint.h"
#include "systole/summary_writer.h"
#include "systole/trainer.h"
#include "train_config.h"

namespace systole {

// An epoch's results, as Keras' logs hold them.
struct EpochLogs {
  uint32_t epoch = 0;  // counted from 0
  double loss = 0, accuracy = 0, learning_rate = 0;
  std::optional<double> val_loss, val_accuracy;  // with a validation set

  // loss, accuracy, val_loss or val_accuracy; none when the epoch has no
  // such value (no validation set).
  std::optional<double> get(const std::string& monitor) const;
};

// The running means of the epoch so far, after its `batch`-th batch.
struct BatchLogs {
  uint64_t step = 0;  // optimizer steps of the run, this one included
  uint32_t epoch = 0, batch = 0;
  double loss = 0, accuracy = 0;
};

class Callback {
 public:
  virtual ~Callback() = default;
  virtual Status on_batch_end(const BatchLogs&) { return ok_status(); }
  // Setting `stop` ends training after this epoch.
  virtual Status on_epoch_end(const EpochLogs&, bool& /*stop*/) { return ok_status(); }
};

// Whether a monitored value improved on the best so far: Keras' rule, a
// loss must fall below best - min_delta, an accuracy rise above best +
// min_delta.
class Improvement {
 public:
  Improvement(std::string monitor, double min_delta);
  const std::string& monitor() const { return monitor_; }
  std::optional<double> best() const { return best_; }
  // Reads the monitor from `logs` (an error naming `field` when the epoch
  // has no such value) and records it if it improves.
  Result<bool> update(const EpochLogs& logs, const char* field);

 private:
  std::string monitor_;
  double min_delta_;
  bool maximise_;
  std::optional<double> best_;
};

// TerminateOnNaN: a NaN or infinite loss ends the run with an error naming
// the epoch, batch and step (before the epoch's checkpoint is written, so
// the last one stays good).
class TerminateOnNaN final : public Callback {
 public:
  Status on_batch_end(const BatchLogs& logs) override;
};

// EarlyStopping(monitor, patience, min_delta, restore_best_weights).
class EarlyStopping final : public Callback {
 public:
  EarlyStopping(const TrainConfig& config, Trainer& trainer);
  Status on_epoch_end(const EpochLogs& logs, bool& stop) override;

 private:
  Improvement improvement_;
  uint32_t patience_, wait_ = 0;
  bool restore_best_;
  Trainer& trainer_;
  uint32_t best_epoch_ = 0;
  ModelValues best_weights_;
};

// Writes the checkpoint after every epoch, or with save_best_only after an
// epoch that improves the monitor. `save(epochs_done)` writes it.
class ModelCheckpoint final : public Callback {
 public:
  ModelCheckpoint(const TrainConfig& config, std::function<Status(uint32_t)> save);
  Status on_epoch_end(const EpochLogs& logs, bool& stop) override;
  // The epochs done at the last checkpoint written (0: none).
  uint32_t saved_epochs() const { return saved_epochs_; }

 private:
  std::optional<Improvement> best_only_;
  std::string dir_;
  std::function<Status(uint32_t)> save_;
  uint32_t saved_epochs_ = 0;
};

// CSVLogger(filename, append): epoch,accuracy,learning_rate,loss then
// val_accuracy,val_loss with a validation set (Keras' sorted columns); a
// line per epoch, flushed.
class CsvLogger final : public Callback {
 public:
  static Result<std::unique_ptr<CsvLogger>> create(const TrainConfig& config, bool validation);
  Status on_epoch_end(const EpochLogs& logs, bool& stop) override;

 private:
  CsvLogger(std::string path, std::ofstream out, bool validation)
      : path_(std::move(path)), out_(std::move(out)), validation_(validation) {}
  std::string path_;
  std::ofstream out_;
  bool validation_;
};

// TensorBoard(log_dir, update_freq): epoch_loss and epoch_accuracy under
// DIR/train and DIR/validation (step: the epoch), epoch_learning_rate under
// train, and batch_loss, batch_accuracy under train every update_freq
// steps (step: the optimizer step).
class TensorBoard final : public Callback {
 public:
  static Result<std::unique_ptr<TensorBoard>> create(const TrainConfig& config, bool validation);
  Status on_batch_end(const BatchLogs& logs) override;
  Status on_epoch_end(const EpochLogs& logs, bool& stop) override;

 private:
  TensorBoard(uint32_t update_freq, SummaryWriter train, std::optional<SummaryWriter> validation)
      : update_freq_(update_freq), train_(std::move(train)), validation_(std::move(validation)) {}
  uint32_t update_freq_;
  SummaryWriter train_;
  std::optional<SummaryWriter> validation_;
};

}  // namespace systole
