// SPDX-License-Identifier: Apache-2.0
// Keras' model.fit in C++: a classifier trained on two compute units by
// the library's fit(), with the library's progress bar and early stopping
// and a callback of this program's own, which keeps the best validation
// accuracy and prints a line per epoch.
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
    const uint8_t label = uint8_t(rng() % kClasses);
    data.labels.push_back(label);
    for (uint32_t f = 0; f < kFeatures; ++f)
      data.images.push_back(centres[label * kFeatures + f] + normal(rng));
  }
  return data;
}

// A callback of our own: Keras' on_epoch_end with the epoch's logs.
class BestAccuracy final : public Callback {
 public:
  double best = 0;
  Status on_epoch_end(uint32_t epoch, const Logs& logs) override {
    const double accuracy = logs.at("val_accuracy");
    if (accuracy > best) best = accuracy;
    std::printf("  [BestAccuracy] epoch %u: val_accuracy %.4f, best %.4f, optimizer step %llu\n", epoch + 1,
                accuracy, best, (unsigned long long)trainer().optimizer().steps());
    return ok_status();
  }
};

int fail(const Status& status) {
  std::fprintf(stderr, "fit: %s\n", status.to_string().c_str());
  return 1;
}

}  // namespace

int main() {
  const Dataset train = clusters(4096, 2), validation = clusters(1024, 3);
  DeviceOptions options;
  options.compute_units = 2;
  auto device = Device::open("sw_emu", 0, options);
  if (!device.ok()) return fail(device.status());

  TrainerConfig config;
  config.model = dense_stack(kFeatures, {64}, kClasses);
  config.optimizer.learning_rate = 1e-2f;
  config.global_batch = 128;
  auto trainer = Trainer::create(*device, {0, 1}, config);
  if (!trainer.ok()) return fail(trainer.status());

  ArraySource batches(train, config.global_batch, config.seed);
  FitOptions fit_options;
  fit_options.epochs = 5;
  fit_options.validation_data = &validation;
  auto best = std::make_shared<BestAccuracy>();
  auto history = fit(**trainer, batches, fit_options,
                     {std::make_shared<ProgressBar>(), best,
                      std::make_shared<EarlyStopping>(EarlyStoppingOptions{"val_loss", 2})});
  if (!history.ok()) return fail(history.status());
  std::printf("trained %zu epochs; best val_accuracy %.4f\n", history->epochs.size(), best->best);
  return best->best > 0.9 ? 0 : 1;
}
