// SPDX-License-Identifier: Apache-2.0
// float32 arrays from NumPy .npy files (format versions 1.0 to 3.0), the
// header bounded by the file before anything is allocated.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "systole/status.h"

namespace systole::tools {

struct NpyArray {
  std::vector<uint64_t> shape;  // at least one dimension, none zero
  std::vector<float> values;    // row-major (C order)
};

// Reads a little-endian float32 array ('<f4', C or Fortran order). Errors
// name the file and what is wrong: not a regular file, the magic or
// version, the header's length, syntax or keys, the dtype, the shape, and
// data shorter or longer than the shape says.
Result<NpyArray> read_npy(const std::string& path);

struct NpyMatrix {
  uint32_t rows = 0, cols = 0;
  std::vector<float> values;  // rows x cols, row-major
};

// read_npy of a 2-D array, each dimension below 2^32.
Result<NpyMatrix> read_npy_matrix(const std::string& path);

}  // namespace systole::tools
