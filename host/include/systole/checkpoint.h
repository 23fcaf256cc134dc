// SPDX-License-Identifier: Apache-2.0
// Checkpoints in the safetensors format (an 8-byte little-endian header
// length, a JSON header naming each tensor's dtype, shape and byte range,
// then the raw data), which PyTorch users open with the safetensors package.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "systole/optimizer.h"
#include "systole/parameters.h"
#include "systole/status.h"

namespace systole {

struct Tensor {
  std::string name;
  std::vector<uint64_t> shape;
  std::vector<float> values;  // row-major
  bool int64 = false;         // stored as I64 (counts), else F32
};

struct Checkpoint {
  std::vector<Tensor> tensors;
  std::map<std::string, std::string> metadata;  // "__metadata__"

  const Tensor* find(const std::string& name) const;
};

// The metadata key under which the writer records the CRC-32C of the data
// section (every byte after the header), as 8 hex digits.
inline constexpr const char* kDataChecksumKey = "data_crc32c";

// Writes atomically: a temporary file in the same directory, flushed to
// disk, then renamed over `path`. A failed write leaves no file behind. The
// metadata gains kDataChecksumKey.
Status write_safetensors(const std::string& path, const Checkpoint& checkpoint);

// Reads and validates a file: header size, JSON, dtypes (F32, and I64 for
// counts below 2^24), shapes (no larger than the file) against byte ranges,
// ranges inside the file and not overlapping, and the data section's
// checksum when the header records one. Errors name the file and the
// tensor.
Result<Checkpoint> read_safetensors(const std::string& path);

// A model's tensors under their state_dict() names, and with `optimizer`,
// its state as "optimizer.<slot>.<name>" (same shapes).
Checkpoint model_tensors(const ParameterStore& store, const Optimizer* optimizer);

// A model's values as a checkpoint holds them: each region of the store,
// laid out as in the store, and the optimizer's slots by name.
struct ModelValues {
  std::vector<float> trainable, buffers, tables;
  std::vector<std::pair<std::string, std::vector<float>>> optimizer_state;

  std::vector<float>& region(Region region) {
    return region == Region::kTrainable ? trainable : region == Region::kBuffer ? buffers : tables;
  }
  const std::vector<float>& region(Region region) const {
    return const_cast<ModelValues*>(this)->region(region);
  }
};

// Fills `values` from a checkpoint, with the optimizer state of `slots`
// (none: the model alone); errors name `path` and the tensor that is
// missing, of the wrong shape, or not the model's (strict: a tensor may be
// a parameter or an optimizer slot of one, nothing else).
Status read_model_tensors(const Checkpoint& checkpoint, const std::string& path, const ParameterStore& store,
                          const std::vector<OptimizerSlot>& slots, ModelValues& values);

}  // namespace systole
