// SPDX-License-Identifier: Apache-2.0
// The checkpoint loader: any file ends in tensors that fit the file, or a
// named error; what it accepts, it writes back and reads again unchanged.
#include <cstring>

#include "fuzz_input.h"
#include "systole/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace systole;
  const std::string path = fuzz::write_file("model.safetensors", {reinterpret_cast<const char*>(data), size});
  Result<Checkpoint> checkpoint = read_safetensors(path);
  if (!checkpoint.ok()) {
    if (checkpoint.status().message().find("model.safetensors") == std::string::npos)
      fuzz::fail("the error does not name the file: " + checkpoint.status().to_string());
    return 0;
  }
  uint64_t values = 0;
  for (const auto& tensor : checkpoint->tensors) values += tensor.values.size();
  if (values * 4 > size) fuzz::fail("more values than the file has bytes");
  const std::string copy = fuzz::scratch_directory() + "/copy.safetensors";
  if (!write_safetensors(copy, *checkpoint).ok()) fuzz::fail("an accepted checkpoint cannot be written");
  Result<Checkpoint> again = read_safetensors(copy);
  if (!again.ok() || again->tensors.size() != checkpoint->tensors.size())
    fuzz::fail("an accepted checkpoint does not read back");
  for (std::size_t i = 0; i < again->tensors.size(); ++i)
    if (again->tensors[i].name != checkpoint->tensors[i].name ||
        again->tensors[i].shape != checkpoint->tensors[i].shape ||
        std::memcmp(again->tensors[i].values.data(), checkpoint->tensors[i].values.data(),
                    again->tensors[i].values.size() * sizeof(float)) != 0)
      fuzz::fail("tensor " + again->tensors[i].name + " changed on the round trip");
  return 0;
}
