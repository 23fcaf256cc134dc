// SPDX-License-Identifier: Apache-2.0
// What accel_train prints about a run besides fit's progress: the run's
// summary before training, where its steps' time went, and the perf
// backend's projection of the training steps after it.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "systole/callback.h"
#include "systole/driver.h"
#include "systole/process_group.h"
#include "systole/run/config.h"
#include "systole/run/ranking.h"
#include "systole/trainer.h"

namespace systole {

// The device, the job (under mpirun), the model with its torch.nn
// equivalent, and the data.
void print_run_summary(const RunConfig& config, const Device& device, const std::vector<uint32_t>& units,
                       const Trainer& trainer, const ProcessGroup* group, const std::string& data);

// "test_loss: 0.3021 - test_accuracy: 0.8912": an evaluation's logs, the
// loss first.
void print_test_logs(const Logs& logs);

// The ranking report: "ranking: 50 test users (of 50), ..." and a line for
// the model and one for the popularity baseline.
void print_ranking(const RankingReport& report);

// "LABEL: 2.65 ms = array products 1.01 (38 %), staging ..., other 0.41":
// where `steps` training steps that took `seconds` went, in ms per step (a
// replica's, the mean over the replicas: they run side by side), with the
// time waiting for input as a part when `input_seconds` is given (the
// caller's `seconds` then include it). "other" is what the parts leave:
// the loop's own work (callbacks, metrics, the replicas' hand-offs).
void print_step_times(const char* label, const StepTimes& times, double seconds, uint64_t steps,
                      std::optional<double> input_seconds);

// The training steps after a run's first, which carries the run's warm-up
// (buffers allocated, device memory first touched): what each step of a
// long run costs. Each step is timed from its batch's begin to its end.
class SteadyStepMeter {
 public:
  explicit SteadyStepMeter(const Trainer& trainer) : trainer_(trainer) {}
  // The callback that times fit's training steps.
  std::shared_ptr<Callback> callback();
  // Prints "step time after the first step: ..."; nothing after fewer
  // than two steps.
  void report() const;

 private:
  using Clock = std::chrono::steady_clock;
  const Trainer& trainer_;
  Clock::time_point begun_;
  std::optional<StepTimes> first_;  // the trainer's, after the first step
  StepTimes last_;                  // after the latest step
  double seconds_ = 0;              // of the steps after the first
  uint64_t steps_ = 0;
};

// perf: adds up the board's projection over the training steps of each
// epoch (its validation pass left out), and prints it.
class ProjectionMeter {
 public:
  explicit ProjectionMeter(const Device& device);
  // The callback that meters fit's training steps.
  std::shared_ptr<Callback> callback();
  // Prints the projection of `steps` steps of `examples` in all; nothing
  // when the device makes no projections.
  void report(uint64_t steps, uint64_t examples) const;

 private:
  std::optional<CardModel> model_;  // none: the device models no board
  std::optional<Projection> total_;
  std::optional<Projection> step_start_;
};

}  // namespace systole
