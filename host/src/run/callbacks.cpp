// SPDX-License-Identifier: Apache-2.0
#include "systole/run/callbacks.h"

#include <algorithm>
#include <string>
#include <tuple>

namespace systole {

Result<Callbacks> make_callbacks(const RunConfig& config, bool lead, bool interactive, bool validation,
                                 uint32_t first_epoch, std::shared_ptr<ModelCheckpoint>& checkpoints) {
  Callbacks callbacks;
  callbacks.push_back(std::make_shared<ProgressBar>(ProgressBarOptions{interactive, config.log_every}));
  // The monitors exist (checked before any callback is made, so no file is
  // opened for a run that cannot start).
  for (const auto& [enabled, monitor, field] :
       {std::tuple{config.early_stopping, config.early_stopping_monitor, "callbacks.early_stopping.monitor"},
        std::tuple{config.save_best_only, config.checkpoint_monitor, "checkpoint.monitor"}})
    if (enabled && !validation && monitor.rfind("val_", 0) == 0)
      return Status(StatusCode::kInvalidArgument, std::string(field) + ": " + monitor +
                                                      " is not available (the run has no validation set)");
  if (config.terminate_on_nan) callbacks.push_back(std::make_shared<TerminateOnNaN>());
  // Those that write files, on rank 0.
  if (lead && !config.csv_logger_filename.empty()) {
    auto logger = CsvLogger::create({config.csv_logger_filename, config.csv_append});
    if (!logger.ok())
      return Status(logger.status().code(), "callbacks.csv_logger.filename: " + logger.status().message());
    callbacks.push_back(*logger);
  }
  if (lead && !config.tensorboard_dir.empty()) {
    auto board = TensorBoard::create({config.tensorboard_dir, config.tensorboard_update_freq}, validation);
    if (!board.ok()) return Status(board.status().code(), "tensorboard: " + board.status().message());
    callbacks.push_back(*board);
  }
  if (lead && !config.checkpoint_dir.empty()) {
    checkpoints = std::make_shared<ModelCheckpoint>(
        ModelCheckpointOptions{config.checkpoint_dir, config.save_best_only, config.checkpoint_monitor},
        first_epoch);
    callbacks.push_back(checkpoints);
  }
  // EarlyStopping last, on every rank: what the writers wrote of the epoch
  // it stops in is that epoch's, before it restores the best weights.
  if (config.early_stopping)
    callbacks.push_back(std::make_shared<EarlyStopping>(
        EarlyStoppingOptions{config.early_stopping_monitor, config.early_stopping_patience,
                             config.early_stopping_min_delta, config.early_stopping_restore_best}));
  return callbacks;
}

void add_after_progress_bar(Callbacks& callbacks, std::shared_ptr<Callback> callback) {
  auto bar = std::find_if(callbacks.begin(), callbacks.end(), [](const std::shared_ptr<Callback>& c) {
    return dynamic_cast<ProgressBar*>(c.get());
  });
  callbacks.insert(bar == callbacks.end() ? callbacks.begin() : bar + 1, std::move(callback));
}

}  // namespace systole
