// SPDX-License-Identifier: Apache-2.0
// The callbacks a config asks for (callbacks.*, checkpoint.*, tensorboard),
// for accel_train and the Python package's fit.
#pragma once

#include <cstdint>
#include <memory>

#include "systole/callbacks.h"
#include "train_config.h"

namespace systole {

// The callbacks the config asks for, in the order they run: the progress
// bar, then those that decide (on every rank: they see the job's totals),
// then those that write files (on rank 0).
Result<Callbacks> make_callbacks(const TrainConfig& config, bool lead, bool interactive, bool validation,
                                 uint32_t first_epoch, std::shared_ptr<ModelCheckpoint>& checkpoints);

}  // namespace systole
