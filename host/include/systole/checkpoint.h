// Checkpoints in the safetensors format (an 8-byte little-endian header
// length, a JSON header naming each tensor's dtype, shape and byte range,
// then the raw data), which PyTorch users open with the safetensors package.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "systole/status.h"

namespace systole {

struct Tensor {
  std::string name;
  std::vector<uint64_t> shape;
  std::vector<float> values;  // F32, row-major
};

struct Checkpoint {
  std::vector<Tensor> tensors;
  std::map<std::string, std::string> metadata;  // "__metadata__"

  const Tensor* find(const std::string& name) const;
};

// Writes atomically: a temporary file in the same directory, flushed to
// disk, then renamed over `path`. A failed write leaves no file behind.
Status write_safetensors(const std::string& path, const Checkpoint& checkpoint);

// Reads and validates a file: header size, JSON, dtypes (F32 only), shapes
// against byte ranges, ranges inside the file and not overlapping. Errors
// name the file and the tensor.
Result<Checkpoint> read_safetensors(const std::string& path);

}  // namespace systole
