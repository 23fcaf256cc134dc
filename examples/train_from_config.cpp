// SPDX-License-Identifier: Apache-2.0
// accel_train's run in a program of its own: the run library (Systole::run)
// reads a YAML config (and overrides, a YAML document of the same keys),
// loads its data, opens its device and builds the trainer; fit trains with
// the config's callbacks and one of this program's.
//   train_from_config configs/fashion_mnist.yaml "{train: {epochs: 1}}"
#include <cstdio>
#include <memory>

#include "systole/run/run.h"

using namespace systole;

// Keras' on_epoch_end: the epoch's loss and the steps so far.
class EpochLine final : public Callback {
 public:
  Status on_epoch_end(uint32_t epoch, const Logs& logs) override {
    std::printf("[EpochLine] epoch %u: loss %.4f after %llu steps\n", epoch + 1, logs.at("loss"),
                (unsigned long long)trainer().optimizer().steps());
    return ok_status();
  }
};

int fail(const Status& status) {
  std::fprintf(stderr, "train_from_config: %s\n", status.to_string().c_str());
  return 1;
}

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) return std::fprintf(stderr, "usage: train_from_config CONFIG [OVERRIDES]\n"), 2;
  RunConfig config;
  Status read = load_run_config(argv[1], config);
  if (read.ok() && argc == 3) read = parse_run_config(argv[2], "overrides", config);
  if (!read.ok()) return fail(read);
  auto run = TrainingRun::open(config);
  if (!run.ok()) return fail(run.status());
  FitOptions options = (*run)->fit_options();
  auto callbacks = (*run)->config_callbacks(false, options.validation_data != nullptr, 0);
  if (!callbacks.ok()) return fail(callbacks.status());
  callbacks->push_back(std::make_shared<EpochLine>());
  auto history = fit((*run)->trainer(), *(*run)->batches(), options, *callbacks);
  if (!history.ok()) return fail(history.status());
  auto tested = evaluate((*run)->trainer(), (*run)->data()->test);
  if (!tested.ok()) return fail(tested.status());
  std::printf("test accuracy %.4f after %llu steps\n", tested->at("accuracy"),
              (unsigned long long)history->steps);
  return 0;
}
