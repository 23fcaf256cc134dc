// SPDX-License-Identifier: Apache-2.0
// Keras' fit, evaluate and predict over a Trainer: the epoch loop, the
// running means, validation, callbacks and stop requests, as library code
// that the tools and any C++ or Python program share.
//
//   ArraySource train(data, trainer.config().global_batch, seed);
//   FitOptions options;
//   options.epochs = 10;
//   options.validation_data = &validation;
//   auto history = fit(trainer, train, options, {std::make_shared<ProgressBar>()});
//
// Under a ProcessGroup every process calls fit with the same options and
// sources that agree on the number of batches; the logs are the job's
// totals, so every rank's callbacks see the same values.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "systole/callback.h"
#include "systole/dataset.h"
#include "systole/record_pipeline.h"
#include "systole/status.h"
#include "systole/trainer.h"

namespace systole {

// Where fit's training batches come from: one pass over the data per
// epoch, full batches only.
class BatchSource {
 public:
  virtual ~BatchSource() = default;
  // The batches of an epoch.
  virtual uint64_t batches_per_epoch() const = 0;
  // Starts epoch `epoch` (its order is a function of the source's seed and
  // the epoch, so a resumed run sees the batches an unbroken one would).
  virtual Status start_epoch(uint32_t epoch) = 0;
  // The epoch's next batch; false after its last.
  virtual Result<bool> next(Batch& batch) = 0;
  // Whether a batch is this process's share of the global batch (a
  // sharded pipeline: Trainer::step_local) rather than all of it
  // (Trainer::step).
  virtual bool process_share() const { return false; }
  // Records skipped as corrupt so far this epoch, and why an epoch ended
  // before batches_per_epoch() batches (empty when it cannot).
  virtual uint64_t skipped() const { return 0; }
  virtual std::string shortfall() const { return ""; }
};

// Keras' fit(x, y): an in-memory data set, shuffled each epoch with
// (seed, epoch) and cut into global batches, the remainder dropped. The
// data must outlive the source.
class ArraySource final : public BatchSource {
 public:
  ArraySource(const Dataset& data, uint32_t global_batch, uint64_t seed, bool shuffle = true);
  ~ArraySource() override;
  uint64_t batches_per_epoch() const override;
  Status start_epoch(uint32_t epoch) override;
  Result<bool> next(Batch& batch) override;

 private:
  const Dataset& data_;
  uint32_t global_batch_;
  uint64_t seed_;
  bool shuffle_;
  std::unique_ptr<BatchStream> stream_;
};

// TFRecord files through input pipelines, one per replica of this process
// (TensorFlow's PER_REPLICA input mode): global replica g of a job of R
// reads shard g of R, so the examples each replica takes in a step are the
// same however the replicas are spread over processes. A batch is this
// process's replicas' batches, in replica order.
class PipelineSource final : public BatchSource {
 public:
  // Replicas [first, first + local) of `total`, each reading its shard of
  // `plan`'s files in batches of `per_replica` with a shuffle buffer of
  // `shuffle_buffer` records. An error names the replica whose shard holds
  // less than a batch.
  static Result<std::unique_ptr<PipelineSource>> per_replica(const RecordPipeline& plan, uint32_t first,
                                                             uint32_t local, uint32_t total,
                                                             uint32_t per_replica, uint32_t shuffle_buffer);
  uint64_t batches_per_epoch() const override { return replicas_.front()->batches_per_epoch(); }
  Status start_epoch(uint32_t epoch) override;
  Result<bool> next(Batch& batch) override;
  bool process_share() const override { return true; }
  uint64_t skipped() const override;
  std::string shortfall() const override;  // the records skipped, and the first reason

 private:
  explicit PipelineSource(std::vector<std::unique_ptr<RecordPipeline>> replicas)
      : replicas_(std::move(replicas)) {}
  std::vector<std::unique_ptr<RecordPipeline>> replicas_;
  Batch part_;  // one replica's batch, reused
};

struct FitOptions {
  uint32_t epochs = 1;           // fit runs epochs [initial_epoch, epochs)
  uint32_t initial_epoch = 0;    // resuming: the epochs already done
  uint64_t steps_per_epoch = 0;  // batches per epoch; 0 or more than the source has: all
  // Evaluated after every validation_freq-th epoch (null: none).
  const Dataset* validation_data = nullptr;
  uint32_t validation_freq = 1;
  // Asked after every batch; a non-zero answer stops fit after that batch
  // (Ctrl-C, a signal). Under a ProcessGroup every rank must give the same
  // answer after the same batch (agree through the group).
  std::function<Result<int>()> interrupt;
  // This process writes the job's files (rank 0); callbacks read it from
  // params().lead.
  bool lead = true;
};

// What fit did (Keras' History).
struct History {
  std::vector<uint32_t> epochs;                        // the epochs run, counted from 0
  std::map<std::string, std::vector<double>> history;  // each log's value per epoch run
  // The training steps' totals (validation not included).
  uint64_t steps = 0, examples = 0;
  double seconds = 0, input_wait_seconds = 0;
  double launches_per_step = 0;  // replica 0's, in the last epoch
  StepTimes step_times;          // where the steps' time went
  // A callback asked to stop (EarlyStopping).
  bool stopped_early = false;
  // When `interrupt` stopped fit: its answer and where (epoch from 0,
  // batches done of the epoch's batches).
  int interrupted = 0;
  uint32_t interrupted_epoch = 0;
  uint64_t interrupted_batch = 0, interrupted_batches = 0;
};

// Trains `trainer` on `train`. Callbacks run in the order given. An error
// from a step, the source or a callback ends fit with that error.
Result<History> fit(Trainer& trainer, BatchSource& train, const FitOptions& options,
                    const Callbacks& callbacks = {});

// The loss and the metrics over `data` ("loss", "accuracy", ...), with the callbacks'
// test hooks.
Result<Logs> evaluate(Trainer& trainer, const Dataset& data, const Callbacks& callbacks = {});

// Logits of `count` examples (count x classes, row-major), in batches of
// steps_per_execution per-replica batches, with the predict hooks.
Result<std::vector<float>> predict(Trainer& trainer, const float* inputs, uint32_t count,
                                   const Callbacks& callbacks = {});

}  // namespace systole
