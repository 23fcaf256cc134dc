// SPDX-License-Identifier: Apache-2.0
// The callback interface of fit(), evaluate() and predict(), with Keras'
// hooks and logs: a callback is a class that overrides the on_* hooks it
// needs. Hooks return a Status; an error ends the call that ran the hook
// (fit, evaluate or predict) with that error.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "systole/status.h"

namespace systole {

class Trainer;

// Keras' logs: named scalars. Batch logs hold the running means of the
// epoch so far ("loss", "accuracy", ...); epoch logs add "learning_rate"
// and, after a validation pass, "val_loss", "val_accuracy", .... The map
// is sorted by name, which is also the order of Keras' CSVLogger columns.
using Logs = std::map<std::string, double>;

// The value of `key` in `logs`, if the logs hold one.
std::optional<double> log_value(const Logs& logs, const std::string& key);

// What a callback may know of the call running it (Keras' callback.params
// and callback.model).
struct CallbackParams {
  uint32_t epochs = 0;      // fit: the epoch after the last to run
  uint64_t steps = 0;       // batches per epoch (fit) or per call (predict)
  bool validation = false;  // fit: whether each epoch ends with a validation pass
  bool lead = true;         // this process writes the job's files (rank 0)
};

class Callback {
 public:
  virtual ~Callback() = default;

  // Set by fit/evaluate/predict before their first hook.
  void set_trainer(Trainer* trainer) { trainer_ = trainer; }
  void set_params(const CallbackParams& params) { params_ = params; }

  // fit. `batch` counts the epoch's batches from 0; `epoch` the run's
  // epochs from 0.
  virtual Status on_train_begin(const Logs&) { return ok_status(); }
  virtual Status on_train_end(const Logs&) { return ok_status(); }
  virtual Status on_epoch_begin(uint32_t /*epoch*/, const Logs&) { return ok_status(); }
  virtual Status on_epoch_end(uint32_t /*epoch*/, const Logs&) { return ok_status(); }
  virtual Status on_train_batch_begin(uint64_t /*batch*/, const Logs&) { return ok_status(); }
  virtual Status on_train_batch_end(uint64_t /*batch*/, const Logs&) { return ok_status(); }
  // evaluate, and fit's validation passes. Evaluation runs every replica's
  // shard of the data set as command lists of steps_per_execution
  // batches, in parallel, so it reports its totals, not batches.
  virtual Status on_test_begin(const Logs&) { return ok_status(); }
  virtual Status on_test_end(const Logs&) { return ok_status(); }
  // predict. Batch logs hold "examples", the number in the batch.
  virtual Status on_predict_begin(const Logs&) { return ok_status(); }
  virtual Status on_predict_end(const Logs&) { return ok_status(); }
  virtual Status on_predict_batch_begin(uint64_t /*batch*/, const Logs&) { return ok_status(); }
  virtual Status on_predict_batch_end(uint64_t /*batch*/, const Logs&) { return ok_status(); }

  // Keras' model.stop_training: fit stops after the epoch in progress.
  bool stop_training_requested() const { return stop_training_; }
  void clear_stop_training() { stop_training_ = false; }

 protected:
  // The trainer being run (valid inside the hooks).
  Trainer& trainer() const { return *trainer_; }
  const CallbackParams& params() const { return params_; }
  void request_stop_training() { stop_training_ = true; }

 private:
  Trainer* trainer_ = nullptr;
  CallbackParams params_;
  bool stop_training_ = false;
};

// Callbacks in the order their hooks run. Shared ownership: a caller may
// keep a handle to a callback to read it after fit (a ModelCheckpoint's
// last epoch, say).
using Callbacks = std::vector<std::shared_ptr<Callback>>;

}  // namespace systole
