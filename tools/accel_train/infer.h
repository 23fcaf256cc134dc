// SPDX-License-Identifier: Apache-2.0
// accel_train evaluate and predict: a model and its weights from a
// checkpoint, the test set's loss and accuracy or the logits of a .npy of
// examples.
#pragma once

#include "command_line.h"

namespace systole {

// The tool's exit code (2: an error, printed).
int infer(Mode mode, const RunConfig& config, const InferOptions& options);

}  // namespace systole
