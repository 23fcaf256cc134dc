// SPDX-License-Identifier: Apache-2.0
// The .npy reader: any file ends in an array as large as the file holds, or
// a named error.
#include "fuzz_input.h"
#include "npy_matrix.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace systole;
  const std::string path = fuzz::write_file("array.npy", {reinterpret_cast<const char*>(data), size});
  auto array = tools::read_npy(path);
  if (!array.ok()) {
    if (array.status().message().find("array.npy") == std::string::npos)
      fuzz::fail("the error does not name the file: " + array.status().to_string());
    return 0;
  }
  uint64_t count = 1;
  for (uint64_t dim : array->shape) count *= dim;
  if (array->shape.empty() || count != array->values.size() || count * 4 > size)
    fuzz::fail("an array whose shape disagrees with its values or the file");
  return 0;
}
