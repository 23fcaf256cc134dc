// SPDX-License-Identifier: Apache-2.0
// The library's callbacks, with Keras' names and semantics: ProgressBar
// (Keras' progress bar), TerminateOnNaN, EarlyStopping, ModelCheckpoint,
// CSVLogger, TensorBoard and LambdaCallback. Each takes an options struct.
// Under a ProcessGroup, run those that decide (TerminateOnNaN,
// EarlyStopping) on every rank, since their inputs are the job's totals;
// run those that write files on rank 0 only.
#pragma once

#include <chrono>
#include <cstdint>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "systole/callback.h"
#include "systole/checkpoint.h"
#include "systole/summary_writer.h"

namespace systole {

// "Epoch 3/15", then "  7/469 [==>....] - 1s 15ms/step - loss: 0.4123 -
// accuracy: 0.8512" as the epoch goes (rewritten in place on a terminal,
// every log_every batches otherwise), and the epoch's line with its
// validation results.
struct ProgressBarOptions {
  bool interactive = false;  // a terminal: the line is redrawn after every batch
  uint32_t log_every = 0;    // not a terminal: a line every N batches (0: the epoch's line only)
};

class ProgressBar final : public Callback {
 public:
  explicit ProgressBar(ProgressBarOptions options = {}) : options_(options) {}
  Status on_epoch_begin(uint32_t epoch, const Logs& logs) override;
  Status on_train_batch_end(uint64_t batch, const Logs& logs) override;
  Status on_epoch_end(uint32_t epoch, const Logs& logs) override;

 private:
  std::string line(uint64_t batch, const Logs& logs) const;
  ProgressBarOptions options_;
  std::chrono::steady_clock::time_point start_;
  double seconds_ = 0;  // the epoch's training time at its last batch
  Logs last_;           // the last batch's logs
};

// A NaN or infinite loss ends fit with an error naming the epoch, batch
// and optimizer step (before the epoch's checkpoint, so the last one stays
// good).
class TerminateOnNaN final : public Callback {
 public:
  Status on_epoch_begin(uint32_t epoch, const Logs&) override {
    epoch_ = epoch;
    return ok_status();
  }
  Status on_train_batch_end(uint64_t batch, const Logs& logs) override;

 private:
  uint32_t epoch_ = 0;
};

// Whether a monitored value improved on the best so far: Keras' rule, a
// loss must fall below best - min_delta, an accuracy rise above best +
// min_delta.
class Improvement {
 public:
  Improvement(std::string monitor, double min_delta);
  const std::string& monitor() const { return monitor_; }
  std::optional<double> best() const { return best_; }
  // Reads the monitor from the epoch's logs (an error naming `owner` when
  // they hold no such value) and records it if it improves.
  Result<bool> update(const Logs& logs, const std::string& owner);

 private:
  std::string monitor_;
  double min_delta_;
  bool maximise_;
  std::optional<double> best_;
};

struct EarlyStoppingOptions {
  std::string monitor = "val_loss";
  uint32_t patience = 0;
  double min_delta = 0;
  bool restore_best_weights = false;
};

// Stops fit once the monitor has not improved for `patience` epochs;
// with restore_best_weights, the weights of the best epoch come back (the
// optimizer's state goes on, as Keras').
class EarlyStopping final : public Callback {
 public:
  explicit EarlyStopping(EarlyStoppingOptions options);
  Status on_epoch_end(uint32_t epoch, const Logs& logs) override;

 private:
  EarlyStoppingOptions options_;
  Improvement improvement_;
  uint32_t wait_ = 0, best_epoch_ = 0;
  ModelValues best_weights_;
};

struct ModelCheckpointOptions {
  std::string dir;  // DIR/checkpoint.safetensors and DIR/model.safetensors
  bool save_best_only = false;
  std::string monitor = "val_loss";
};

// Writes DIR/checkpoint.safetensors (to resume from) and
// DIR/model.safetensors (PyTorch's state_dict) after every epoch, or with
// save_best_only after an epoch that improves the monitor.
class ModelCheckpoint final : public Callback {
 public:
  // `epochs_done`: the epochs of the checkpoint the run resumed from (0:
  // none), the last good one until this run writes its own.
  explicit ModelCheckpoint(ModelCheckpointOptions options, uint32_t epochs_done = 0);
  Status on_epoch_end(uint32_t epoch, const Logs& logs) override;
  // The epochs done at the last good checkpoint (0: none).
  uint32_t saved_epochs() const { return saved_epochs_; }

 private:
  ModelCheckpointOptions options_;
  std::optional<Improvement> best_only_;
  uint32_t saved_epochs_;
};

struct CsvLoggerOptions {
  std::string filename;
  bool append = false;
};

// A line per epoch, "epoch" then the logs' keys in sorted order (Keras'
// CSVLogger), flushed. The file is opened when the logger is created, so
// a path that cannot be written fails before training.
class CsvLogger final : public Callback {
 public:
  static Result<std::shared_ptr<CsvLogger>> create(const CsvLoggerOptions& options);
  Status on_epoch_end(uint32_t epoch, const Logs& logs) override;

 private:
  CsvLogger(std::string path, std::ofstream out, bool header)
      : path_(std::move(path)), out_(std::move(out)), header_(header) {}
  std::string path_;
  std::ofstream out_;
  bool header_;  // still to be written
  std::vector<std::string> columns_;
};

struct TensorBoardOptions {
  std::string log_dir;
  uint32_t update_freq = 0;  // batch scalars every N optimizer steps (0: epoch scalars only)
};

// Event files under DIR/train and DIR/validation: epoch_<log> per epoch
// (step: the epoch; val_<log> goes to validation as epoch_<log>), and
// batch_<log> under train every update_freq steps (step: the optimizer
// step).
class TensorBoard final : public Callback {
 public:
  static Result<std::shared_ptr<TensorBoard>> create(const TensorBoardOptions& options, bool validation);
  Status on_train_batch_end(uint64_t batch, const Logs& logs) override;
  Status on_epoch_end(uint32_t epoch, const Logs& logs) override;

 private:
  TensorBoard(uint32_t update_freq, SummaryWriter train, std::optional<SummaryWriter> validation)
      : update_freq_(update_freq), train_(std::move(train)), validation_(std::move(validation)) {}
  uint32_t update_freq_;
  SummaryWriter train_;
  std::optional<SummaryWriter> validation_;
};

// Keras' LambdaCallback: functions for the hooks a program needs, without
// a class of its own.
struct LambdaCallback final : public Callback {
  std::function<Status(uint32_t, const Logs&)> epoch_begin, epoch_end;
  std::function<Status(uint64_t, const Logs&)> train_batch_begin, train_batch_end;
  std::function<Status(const Logs&)> train_end, test_begin, test_end;

  Status on_epoch_begin(uint32_t epoch, const Logs& logs) override {
    return epoch_begin ? epoch_begin(epoch, logs) : ok_status();
  }
  Status on_epoch_end(uint32_t epoch, const Logs& logs) override {
    return epoch_end ? epoch_end(epoch, logs) : ok_status();
  }
  Status on_train_batch_begin(uint64_t batch, const Logs& logs) override {
    return train_batch_begin ? train_batch_begin(batch, logs) : ok_status();
  }
  Status on_train_batch_end(uint64_t batch, const Logs& logs) override {
    return train_batch_end ? train_batch_end(batch, logs) : ok_status();
  }
  Status on_train_end(const Logs& logs) override { return train_end ? train_end(logs) : ok_status(); }
  Status on_test_begin(const Logs& logs) override { return test_begin ? test_begin(logs) : ok_status(); }
  Status on_test_end(const Logs& logs) override { return test_end ? test_end(logs) : ok_status(); }
};

}  // namespace systole
