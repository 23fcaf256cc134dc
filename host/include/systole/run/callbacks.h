// SPDX-License-Identifier: Apache-2.0
// The callbacks a config asks for (callbacks.*, checkpoint.*, tensorboard),
// for every run (TrainingRun::config_callbacks).
#pragma once

#include <cstdint>
#include <memory>

#include "systole/callbacks.h"
#include "systole/run/config.h"

namespace systole {

// The callbacks the config asks for, in the order they run: the progress
// bar, TerminateOnNaN (on every rank: it sees the job's loss; before the
// writers, so a NaN epoch writes no checkpoint), the writers on rank 0
// (CsvLogger, TensorBoard, ModelCheckpoint), then EarlyStopping (on every
// rank), so that a checkpoint written in the epoch it stops holds that
// epoch's weights and optimizer state before it restores the best weights.
Result<Callbacks> make_callbacks(const RunConfig& config, bool lead, bool interactive, bool validation,
                                 uint32_t first_epoch, std::shared_ptr<ModelCheckpoint>& checkpoints);

// Adds `callback` right after the progress bar (found by type; first
// without one), so that the lines it prints follow the epoch's.
void add_after_progress_bar(Callbacks& callbacks, std::shared_ptr<Callback> callback);

}  // namespace systole
