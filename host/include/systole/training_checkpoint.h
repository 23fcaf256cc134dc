// SPDX-License-Identifier: Apache-2.0
// A training run's checkpoints: checkpoint.safetensors holds all that
// resuming needs (the model's tensors, the optimizer's slots, the run's
// settings), model.safetensors exactly the state_dict() a PyTorch user
// loads with strict=True. Resuming refuses a checkpoint of another run.
#pragma once

#include <cstdint>
#include <string>

#include "systole/checkpoint.h"
#include "systole/trainer.h"

namespace systole {

// The format written; systole-mlp/1 (dense stacks, before layers) is still
// read.
inline constexpr const char* kCheckpointFormat = "systole/2";
inline constexpr const char* kLegacyMlpFormat = "systole-mlp/1";

// Where a run with checkpoints in `dir` keeps them.
inline std::string checkpoint_file(const std::string& dir) { return dir + "/checkpoint.safetensors"; }
inline std::string model_file(const std::string& dir) { return dir + "/model.safetensors"; }

// checkpoint.safetensors after `epochs_done` epochs.
Checkpoint make_checkpoint(const Trainer& trainer, uint32_t epochs_done);

// model.safetensors: the tensors of the model's torch_code() state_dict().
Checkpoint make_model_file(const Trainer& trainer);

// Restores a checkpoint written by make_checkpoint (or systole-mlp/1) into
// every replica; returns the epochs it had done. Refused, naming the field
// and both values: another model, optimizer, seed or global batch;
// malformed counters; non-finite values.
Result<uint32_t> resume_from(const std::string& path, Trainer& trainer);

// The model's tensors of a checkpoint.safetensors or model.safetensors
// (optimizer slots in it are not read) into every replica, for evaluate and
// predict: a missing tensor or one of another shape is an error naming it,
// and so is a NaN or infinite value, as when resuming.
Status restore_model(const Checkpoint& checkpoint, const std::string& path, Trainer& trainer);

// Replaces the model's weights (not the optimizer's state) with those of a
// safetensors file under the model's state_dict() names, as PyTorch's
// save_file(model.state_dict()) writes them: to initialise or fine-tune.
// Strict, as load_state_dict(strict=True): a missing tensor, one the model
// does not have or one of another shape is an error naming it; so is a
// NaN or infinite value.
Status load_weights(const std::string& path, Trainer& trainer);

}  // namespace systole
