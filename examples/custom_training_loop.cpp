// SPDX-License-Identifier: Apache-2.0
// A training loop of your own, in the shape of TensorFlow's custom loops
// under a distribution strategy:
//
//   strategy.run(step_fn)       runs one step on every replica (a compute unit)
//   strategy.all_reduce_sum     sums the replicas' gradients, identical bits on all
//   strategy.reduce(kMean, ..)  combines a per-replica metric
//
// Two replicas train a small classifier on three Gaussian clusters. Each
// replica owns a model (built from the same seed, so the copies start
// equal), an optimizer and the compute unit it multiplies on; after every
// step the copies are still equal, which the program checks at the end.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <vector>

#include "systole/loss.h"
#include "systole/matmul.h"
#include "systole/model.h"
#include "systole/optimizer.h"
#include "systole/strategy.h"

namespace {

using namespace systole;

constexpr uint32_t kFeatures = 20, kClasses = 3;

struct Data {
  std::vector<float> inputs;
  std::vector<float> labels;  // class indices
};

// Clusters around three fixed centres, one per class.
Data clusters(uint32_t count, uint64_t seed) {
  std::mt19937_64 centre_rng(1), rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> centres(kClasses * kFeatures);
  for (float& x : centres) x = normal(centre_rng);
  Data data;
  for (uint32_t i = 0; i < count; ++i) {
    const uint32_t label = uint32_t(rng() % kClasses);
    data.labels.push_back(float(label));
    for (uint32_t f = 0; f < kFeatures; ++f)
      data.inputs.push_back(centres[label * kFeatures + f] + normal(rng));
  }
  return data;
}

struct Replica {
  std::unique_ptr<MatmulExecutor> matmul;
  std::unique_ptr<Model> model;
  std::unique_ptr<Optimizer> optimizer;
};

int fail(const Status& status) {
  std::fprintf(stderr, "custom_training_loop: %s\n", status.to_string().c_str());
  return 1;
}

}  // namespace

int main() {
  constexpr uint32_t kReplicas = 2, kGlobalBatch = 128, kEpochs = 3;
  constexpr uint64_t kSeed = 42;
  const Data train = clusters(4096, 2), test = clusters(1024, 3);

  // One emulated device with a compute unit per replica.
  DeviceOptions options;
  options.compute_units = kReplicas;
  Result<Device> device = Device::open("sw_emu", 0, options);
  if (!device.ok()) return fail(device.status());

  const ModelSpec spec = dense_stack(kFeatures, {64}, kClasses);
  OptimizerConfig adam;
  adam.learning_rate = 1e-2f;
  std::vector<Replica> replicas(kReplicas);
  for (uint32_t r = 0; r < kReplicas; ++r) {
    auto matmul = DeviceMatmul::create(*device, r, std::chrono::seconds(60));
    if (!matmul.ok()) return fail(matmul.status());
    auto model = Model::build(spec, kSeed);
    if (!model.ok()) return fail(model.status());
    replicas[r].matmul = std::move(matmul).value();
    replicas[r].model = std::move(model).value();
    auto optimizer = make_optimizer(adam, replicas[r].model->parameters());
    if (!optimizer.ok()) return fail(optimizer.status());
    replicas[r].optimizer = std::move(optimizer).value();
  }
  std::printf("%s", replicas[0].model->summary().c_str());

  // Keras' compile(loss=..., metrics=["accuracy"]): the registered classes.
  Result<std::unique_ptr<Loss>> made_loss = make_loss({"sparse_categorical_crossentropy", {}});
  Result<std::unique_ptr<Metric>> made_metric = make_metric({"accuracy", {}});
  if (!made_loss.ok()) return fail(made_loss.status());
  if (!made_metric.ok()) return fail(made_metric.status());
  const std::unique_ptr<Loss> loss = std::move(made_loss).value();
  const std::unique_ptr<Metric> accuracy_metric = std::move(made_metric).value();

  Strategy strategy(kReplicas);
  const uint32_t per_replica = kGlobalBatch / strategy.num_replicas_in_sync();
  std::vector<double> losses(kReplicas);

  // One synchronous step: each replica takes its slice of the global batch.
  auto step_fn = [&](const float* inputs, const float* labels) {
    return [&, inputs, labels](uint32_t r) -> Status {
      Replica& replica = replicas[r];
      LayerContext context;
      context.matmul = replica.matmul.get();
      context.training = true;
      context.seed = kSeed;
      context.step = replica.optimizer->steps();
      context.replica = r;
      context.replicas = kReplicas;
      context.all_reduce_sum = [&, r](std::vector<float>& values) {
        return strategy.all_reduce_sum(r, values);
      };

      const std::size_t first = std::size_t(r) * per_replica;
      SYSTOLE_RETURN_IF_ERROR(replica.model->forward(context, inputs + first * kFeatures, per_replica));
      std::vector<float> logits_gradient;
      // Divided by the global batch: the summed gradients are the mean's.
      Result<double> loss_sum =
          loss->compute(replica.model->logits(), labels + first, 1, float(kGlobalBatch), &logits_gradient);
      if (!loss_sum.ok()) return loss_sum.status();
      losses[r] = *loss_sum / per_replica;
      SYSTOLE_RETURN_IF_ERROR(replica.model->backward(context, logits_gradient));
      ParameterStore& store = replica.model->parameters();
      SYSTOLE_RETURN_IF_ERROR(strategy.all_reduce_sum(r, store.gradients()));
      // The dense tensors from the summed gradients, and the embedding
      // tables' rows from their row-sparse gradients (summed over the
      // replicas in backward).
      replica.optimizer->apply(store);
      return ok_status();
    };
  };

  const uint32_t steps = uint32_t(train.labels.size()) / kGlobalBatch;
  for (uint32_t epoch = 0; epoch < kEpochs; ++epoch) {
    double epoch_loss = 0;
    for (uint32_t s = 0; s < steps; ++s) {
      const std::size_t at = std::size_t(s) * kGlobalBatch;
      const Status status =
          strategy.run(step_fn(train.inputs.data() + at * kFeatures, train.labels.data() + at));
      if (!status.ok()) return fail(status);
      Result<double> loss = strategy.reduce(ReduceOp::kMean, losses);
      if (!loss.ok()) return fail(loss.status());
      epoch_loss += *loss;
    }
    std::printf("epoch %u: loss %.4f\n", epoch + 1, epoch_loss / steps);
  }

  // Evaluation on replica 0's copy, a batch at a time.
  Replica& replica = replicas[0];
  LayerContext inference;
  inference.matmul = replica.matmul.get();
  std::vector<double> sums(accuracy_metric->sums(), 0.0);  // the metric's, added over batches
  for (std::size_t at = 0; at < test.labels.size(); at += kGlobalBatch) {
    const uint32_t batch = uint32_t(std::min<std::size_t>(kGlobalBatch, test.labels.size() - at));
    const Status status = replica.model->forward(inference, test.inputs.data() + at * kFeatures, batch);
    if (!status.ok()) return fail(status);
    const Status counted =
        accuracy_metric->update(replica.model->logits(), test.labels.data() + at, 1, sums.data());
    if (!counted.ok()) return fail(counted);
  }
  const double accuracy = accuracy_metric->result(sums.data());
  const bool in_sync =
      replicas[0].model->parameters().trainable() == replicas[1].model->parameters().trainable();
  std::printf("test accuracy %.4f; replicas' parameters %s\n", accuracy, in_sync ? "identical" : "DIFFER");
  return accuracy > 0.9 && in_sync ? 0 : 1;
}
