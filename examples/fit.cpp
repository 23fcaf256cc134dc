// SPDX-License-Identifier: Apache-2.0
// Keras' model.fit in C++ with a layer, an optimizer and a metric of this
// program's own, registered by name next to the library's and trained on
// two compute units by the library's fit(), with the library's progress
// bar and early stopping and a callback of this program's own.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>

#include "systole/callbacks.h"
#include "systole/fit.h"

namespace {

using namespace systole;

constexpr uint32_t kFeatures = 20, kClasses = 3;

// Points around three fixed centres, one per class.
Dataset clusters(uint32_t count, uint64_t seed) {
  std::mt19937_64 centre_rng(1), rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> centres(kClasses * kFeatures);
  for (float& x : centres) x = normal(centre_rng);
  Dataset data;
  data.examples = count;
  data.features = kFeatures;
  data.shape = {kFeatures};
  data.classes = kClasses;
  for (uint32_t i = 0; i < count; ++i) {
    const uint32_t label = uint32_t(rng() % kClasses);
    data.labels.push_back(float(label));
    for (uint32_t f = 0; f < kFeatures; ++f)
      data.values.push_back(centres[label * kFeatures + f] + normal(rng));
  }
  return data;
}

// A layer of our own: a learned scale per feature (w initialised to 1),
// y = x * w. Its one tensor is "<torch index>.weight" in the state_dict.
class Scale final : public Layer {
 public:
  Result<Shape> build(const Shapes& inputs, const LayerSite& site, ParameterStore& store) override {
    if (inputs[0].size() != 1)
      return Status(StatusCode::kInvalidArgument, "scale takes a flat input, got " + shape_text(inputs[0]));
    width_ = inputs[0][0];
    weight_ = store.declare(std::to_string(site.torch_index) + ".weight", {width_}, Region::kTrainable);
    return inputs[0];
  }
  void initialize(ParameterStore& store, std::mt19937_64&) const override {
    std::fill_n(store.values(weight_), width_, 1.0f);
  }
  Status forward(LayerContext&, ParameterStore& store, const Inputs& inputs, Activations& output) override {
    output = inputs[0];
    const float* w = store.values(weight_);
    for (std::size_t i = 0; i < output.values.size(); ++i) output.values[i] *= w[i % width_];
    return ok_status();
  }
  // dL/dw: the batch's sum of dy * x (the trainer sums it over replicas);
  // dL/dx = dy * w.
  Status backward(LayerContext&, ParameterStore& store, const Inputs& inputs, const Activations&,
                  const Activations& output_gradient, const InputGradients& input_gradients) override {
    const float* w = store.values(weight_);
    float* dw = store.gradient(weight_);
    std::fill_n(dw, width_, 0.0f);
    for (std::size_t i = 0; i < output_gradient.values.size(); ++i)
      dw[i % width_] += output_gradient.values[i] * inputs[0].values[i];
    if (Activations* dx = input_gradients[0]) {
      *dx = output_gradient;
      for (std::size_t i = 0; i < dx->values.size(); ++i) dx->values[i] *= w[i % width_];
    }
    return ok_status();
  }
  std::string torch_code() const override { return "Scale(" + std::to_string(width_) + ")"; }

 private:
  uint32_t width_ = 0;
  std::size_t weight_ = 0;
};

// An optimizer of our own: Signum (Bernstein et al., 2018), sign descent
// on a momentum: m = beta m + (1 - beta) g; w -= lr sign(m).
class Signum final : public Optimizer {
 public:
  explicit Signum(const OptimizerConfig& config) : Optimizer(config) { add_slot("momentum"); }

 protected:
  void update(const Tensor& tensor, float lr) override {
    const float beta = config().momentum;
    float* m = tensor.slots[0];
    for (std::size_t i = 0; i < tensor.size; ++i) {
      m[i] = beta * m[i] + (1.0f - beta) * tensor.gradient[i];
      tensor.values[i] -= lr * float((m[i] > 0) - (m[i] < 0));
    }
  }
};

// A metric of our own: the mean probability the model gives the class it
// predicts. Its sums (probabilities, examples) add over batches and
// replicas.
class Confidence final : public Metric {
 public:
  std::string name() const override { return "confidence"; }
  Status check(const Shape& output, uint32_t label_width) const override {
    return output.size() == 1 && label_width == 1
               ? ok_status()
               : Status(StatusCode::kInvalidArgument, "confidence takes class logits");
  }
  std::size_t sums() const override { return 2; }
  Status update(const Activations& output, const float*, uint32_t, double* totals) const override {
    const uint32_t classes = output.shape[0];
    for (uint32_t e = 0; e < output.batch; ++e) {
      const float* z = output.values.data() + std::size_t(e) * classes;
      const float top = *std::max_element(z, z + classes);
      double total = 0;
      for (uint32_t c = 0; c < classes; ++c) total += std::exp(double(z[c] - top));
      totals[0] += 1.0 / total;  // the largest class's softmax
      totals[1] += 1;
    }
    return ok_status();
  }
  double result(const double* totals) const override { return totals[0] / totals[1]; }
};

// A callback of our own: Keras' on_epoch_end with the epoch's logs.
class BestAccuracy final : public Callback {
 public:
  double best = 0;
  Status on_epoch_end(uint32_t epoch, const Logs& logs) override {
    const double accuracy = logs.at("val_accuracy");
    if (accuracy > best) best = accuracy;
    std::printf("  [BestAccuracy] epoch %u: val_accuracy %.4f (confidence %.4f), best %.4f, step %llu\n",
                epoch + 1, accuracy, logs.at("val_confidence"), best,
                (unsigned long long)trainer().optimizer().steps());
    return ok_status();
  }
};

int fail(const Status& status) {
  std::fprintf(stderr, "fit: %s\n", status.to_string().c_str());
  return 1;
}

}  // namespace

// Registers what this program adds, by the names a config uses.
Status register_own() {
  SYSTOLE_RETURN_IF_ERROR(register_layer("scale", [](LayerArgs&) -> Result<std::unique_ptr<Layer>> {
    return std::unique_ptr<Layer>(new Scale());
  }));
  SYSTOLE_RETURN_IF_ERROR(
      register_optimizer("signum", [](const OptimizerConfig& config) -> Result<std::unique_ptr<Optimizer>> {
        return std::unique_ptr<Optimizer>(new Signum(config));
      }));
  return register_metric("confidence", [](LayerArgs&) -> Result<std::unique_ptr<Metric>> {
    return std::unique_ptr<Metric>(new Confidence());
  });
}

int main() {
  if (Status registered = register_own(); !registered.ok()) return fail(registered);
  const Dataset train = clusters(4096, 2), validation = clusters(1024, 3);
  DeviceOptions options;
  options.compute_units = 2;
  auto device = Device::open("sw_emu", 0, options);
  if (!device.ok()) return fail(device.status());

  TrainerConfig config;
  config.model.input_shape = {kFeatures};
  config.model.classes = kClasses;
  config.model.layers = {{"scale", {}},
                         {"dense", {{"units", "64"}, {"activation", "relu"}}},
                         {"dense", {{"units", std::to_string(kClasses)}}}};
  config.optimizer.name = "signum";
  config.optimizer.learning_rate = 2e-3f;
  config.metrics = {{"accuracy", {}}, {"confidence", {}}};
  config.global_batch = 128;
  auto trainer = Trainer::create(*device, {0, 1}, config);
  if (!trainer.ok()) return fail(trainer.status());
  std::printf("%s  torch: %s\n", (*trainer)->model().summary().c_str(),
              (*trainer)->model().torch_code().c_str());

  ArraySource batches(train, config.global_batch, config.seed);
  FitOptions fit_options;
  fit_options.epochs = 5;
  fit_options.validation_data = &validation;
  auto best = std::make_shared<BestAccuracy>();
  auto history = fit(**trainer, batches, fit_options,
                     {std::make_shared<ProgressBar>(), best,
                      std::make_shared<EarlyStopping>(EarlyStoppingOptions{"val_loss", 2})});
  if (!history.ok()) return fail(history.status());
  // Signum moved every scale by a multiple of the learning rate.
  const ParameterStore& parameters = (*trainer)->parameters();
  const ParameterStore::Entry* scale = parameters.find("0.weight");
  const float* weights = parameters.trainable().data() + scale->offset;
  const uint32_t moved =
      uint32_t(std::count_if(weights, weights + kFeatures, [](float w) { return w != 1.0f; }));
  std::printf("trained %zu epochs; best val_accuracy %.4f; %u of %u scales moved\n", history->epochs.size(),
              best->best, moved, kFeatures);
  return best->best > 0.9 && moved == kFeatures ? 0 : 1;
}
