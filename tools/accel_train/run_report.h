// SPDX-License-Identifier: Apache-2.0
// What accel_train prints about a run besides fit's progress: the run's
// summary before training, and the perf backend's projection of the
// training steps after it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "systole/callback.h"
#include "systole/driver.h"
#include "systole/process_group.h"
#include "systole/trainer.h"
#include "train_config.h"

namespace systole {

// The device, the job (under mpirun), the model with its torch.nn
// equivalent, and the data.
void print_run_summary(const TrainConfig& config, const Device& device, const std::vector<uint32_t>& units,
                       const Trainer& trainer, const ProcessGroup* group, const std::string& data);

// "test_loss: 0.3021 - test_accuracy: 0.8912": an evaluation's logs, the
// loss first.
void print_test_logs(const Logs& logs);

// perf: adds up the board's projection over the training steps of each
// epoch (its validation pass left out), and prints it.
class ProjectionMeter {
 public:
  explicit ProjectionMeter(Device device);
  // The callback that meters fit's training steps.
  std::shared_ptr<Callback> callback();
  // Prints the projection of `steps` steps of `examples` in all; nothing
  // when the device makes no projections.
  void report(uint64_t steps, uint64_t examples) const;

 private:
  Device device_;
  Result<Projection> total_;
  std::optional<Projection> step_start_;
};

}  // namespace systole
