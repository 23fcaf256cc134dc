// SPDX-License-Identifier: Apache-2.0
// Synchronous data-parallel training of a model on a device's compute
// units, with TensorFlow's distribution semantics: the model is replicated and kept
// identical; a global batch is split evenly over the replicas; each
// replica's loss is its examples' loss sum over the GLOBAL batch size; the
// gradients are summed by all-reduce, so N replicas take the same step as
// one device on the whole batch. Given a ProcessGroup, the replicas of
// several processes train as one job: every process reads the same global
// batches and keeps the slices of its own replicas (TensorFlow's DATA
// sharding), so P processes of K replicas end with the same bits as one
// process of P * K replicas.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "systole/checkpoint.h"
#include "systole/dataset.h"
#include "systole/loss.h"
#include "systole/matmul.h"
#include "systole/model.h"
#include "systole/optimizer.h"
#include "systole/strategy.h"

namespace systole {

class CardStep;

// Where the trainable parameters, their gradients and the optimizer's
// state live between steps.
enum class Placement {
  // On the host: each step stages the weights to every unit, brings every
  // gradient back, all-reduces and updates on the host.
  kHost,
  // On the card (the units' vector engine): the fp32 values, gradients and
  // optimizer slots stay in device memory; the units' gradients are summed
  // there (one sum descriptor, replica order) and the update runs there.
  // Across processes a card's sum continues the earlier processes' and one
  // sum per card crosses to the group. The host link carries the batches,
  // what host layers read and write and what a user asks to see. The same
  // bits as kHost.
  kDevice,
};

struct TrainerConfig {
  ModelSpec model;
  Placement placement = Placement::kHost;
  OptimizerConfig optimizer;
  // Keras' compile(loss=..., metrics=[...]): registered losses and metrics
  // by type, and the labels each example has (0: one, or one per position
  // of a [positions, classes] output, a sequence model's).
  LossConfig loss = {"sparse_categorical_crossentropy", {}};
  std::vector<MetricConfig> metrics = {{"accuracy", {}}};
  uint32_t label_width = 0;
  uint32_t global_batch = 128;
  uint64_t seed = 1;
  // Keras' steps_per_execution, as the hardware can honour it: evaluation
  // runs this many batches per launch (rows are independent, so the
  // results do not change). A training step needs the host between layers
  // (loss, masks, normalisation), so training keeps its launches per layer.
  uint32_t steps_per_execution = 1;
  // The longest a launch may take before the step fails naming the unit.
  std::chrono::milliseconds launch_timeout = std::chrono::minutes(10);
};

// Where training steps' time went, per replica (the mean over this
// process's replicas), summed over steps; evaluation is not included.
struct StepTimes {
  uint64_t steps = 0;
  double forward = 0;   // the forward pass and the loss
  double backward = 0;  // the backward pass
  MatmulTimes device;   // of both passes: the array's products and their staging
  // The all-reduce and the update; with placement: device the update's
  // time holds the card's reduction and its launches.
  double all_reduce = 0, optimizer = 0;

  // The layers' and the loss's own host work (im2col, softmax, pooling,
  // normalisation, masks): the passes less the device's part.
  double host_layers() const { return forward + backward - device.staging_seconds - device.launch_seconds; }
  // The steps after `before` (an earlier value of the same trainer's).
  StepTimes since(const StepTimes& before) const;
};

class Trainer {
 public:
  ~Trainer();
  // One replica on each of `units` of `device`, joined to the replicas of
  // the other processes of `group` (may be null; must outlive the trainer).
  // Fails before any step when the global batch does not divide evenly over
  // the job's replicas, or when the processes run different numbers of them.
  static Result<std::unique_ptr<Trainer>> create(Device device, const std::vector<uint32_t>& units,
                                                 const TrainerConfig& config, ProcessGroup* group = nullptr);

  // Replicas in the whole job, and in this process.
  uint32_t replicas() const { return strategy_.num_replicas_in_sync(); }
  uint32_t local_replicas() const { return strategy_.local_replicas(); }
  uint32_t per_replica_batch() const { return config_.global_batch / replicas(); }
  const TrainerConfig& config() const { return config_; }
  // Launches replica 0 has made (each a command list on its unit).
  uint64_t launches() const { return replicas_[0].matmul->launches(); }
  // Where the training steps so far spent their time.
  StepTimes step_times() const;

  // One synchronous step on a global batch of config().global_batch examples
  // (every process passes the same batch and keeps its replicas' slices).
  Result<StepResult> step(const Batch& batch);
  // The same step when each process reads its own share of the data (a
  // sharded input pipeline): `local` holds this process's
  // local_replicas() * per_replica_batch() examples, in replica order.
  Result<StepResult> step_local(const Batch& local);
  // The loss and metrics' sums over a data set (each replica of the job
  // evaluates a shard; every process gets the totals).
  Result<StepResult> evaluate(const Dataset& data);

  // A result's values by name: "loss" (the mean over its examples) and
  // each metric's, in the order of config().metrics.
  std::vector<std::pair<std::string, double>> results(const StepResult& result) const;

  // Per-example logits of `count` inputs, in evaluation mode, on replica 0;
  // or, given `layers`, the output of the model's first `layers` layers
  // (a two-tower model's tower vectors).
  Result<std::vector<float>> predict(const float* inputs, uint32_t count, std::size_t layers = SIZE_MAX);

  // Replica 0's model and fp32 master parameters (all replicas hold the
  // same bits). With placement: device these bring the card's values and
  // optimizer state to the host first (a failure there fails the next
  // step).
  const Model& model() const {
    sync_to_host();
    return *replicas_[0].model;
  }
  const ParameterStore& parameters() const { return model().parameters(); }
  const Optimizer& optimizer() const {
    sync_to_host();
    return *replicas_[0].optimizer;
  }
  // What the user should know once about where the work runs (an
  // optimizer placement: device cannot run on the card), one line each.
  const std::vector<std::string>& notices() const { return notices_; }
  // Whether every replica of the job holds the same parameter bits.
  Result<bool> replicas_identical() const;

  // Replaces every replica's parameters (every region, as laid out in
  // parameters()) and optimizer state (resume); without optimizer state in
  // `values`, the optimizer goes on from where it is (loading weights,
  // EarlyStopping's best weights).
  Status restore(const ModelValues& values, uint64_t optimizer_steps);

 private:
  struct ReplicaState {
    std::unique_ptr<DeviceMatmul> matmul;
    std::unique_ptr<Model> model;
    std::unique_ptr<Optimizer> optimizer;
    StepTimes times;
  };

  // Brings the card's values and slots to the host when its copy is behind.
  void sync_to_host() const;

  // A step on the global batch, or (local) on this process's share.
  Result<StepResult> train_step(const Batch& batch, bool local);

  // The context of a pass of replica r (its global index, the all-reduce).
  LayerContext context(uint32_t r, bool training);

  // Sums this process's per-replica results over the job, in global order.
  Result<StepResult> combine(const std::vector<StepResult>& local) const;

  Trainer(const TrainerConfig& config, uint32_t replicas, ProcessGroup* group);

  // The loss and metrics of a replica's output on `count` examples from
  // `labels` (gradient: the loss's, over the global batch).
  Result<StepResult> score(const Activations& output, const float* labels, float divisor,
                           std::vector<float>* gradient) const;

  TrainerConfig config_;
  Strategy strategy_;
  std::unique_ptr<Loss> loss_;
  std::vector<std::unique_ptr<Metric>> metrics_;
  std::size_t metric_sums_ = 0;
  std::vector<ReplicaState> replicas_;
  // placement: device: what the cards keep and the step's end there; null
  // with placement: host (or where nothing can go on the card).
  std::unique_ptr<CardStep> card_;
  std::vector<std::string> notices_;
};

}  // namespace systole
