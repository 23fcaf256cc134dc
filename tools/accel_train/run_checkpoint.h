// SPDX-License-Identifier: Apache-2.0
// accel_train's checkpoints: what a run writes (checkpoint.safetensors to
// resume from, model.safetensors for PyTorch) and how it resumes, refusing
// a checkpoint of another run.
#pragma once

#include <cstdint>
#include <string>

#include "systole/checkpoint.h"
#include "systole/trainer.h"
#include "train_config.h"

namespace systole {

// The checkpoint format this tool writes; systole-mlp/1 (the dense-only
// format before layers) is still read.
inline constexpr const char* kCheckpointFormat = "systole/2";
inline constexpr const char* kLegacyMlpFormat = "systole-mlp/1";

// checkpoint.safetensors: the model's state_dict() tensors, the optimizer's
// slots and the run's metadata, all that resuming needs.
Checkpoint make_checkpoint(const Trainer& trainer, const TrainConfig& config, uint32_t epochs_done);

// model.safetensors: exactly the state_dict() of torch_code(), which
// PyTorch loads with strict=True.
Checkpoint make_model_file(const Trainer& trainer);

// Restores a checkpoint written by make_checkpoint (or systole-mlp/1);
// returns the epochs done. A checkpoint of another model, optimizer, seed
// or global batch, with malformed counters or non-finite values, is
// refused.
Result<uint32_t> resume_from(const std::string& path, Trainer& trainer, const TrainConfig& config);

}  // namespace systole
