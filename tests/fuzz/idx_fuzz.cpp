// SPDX-License-Identifier: Apache-2.0
// The IDX reader: [u16 length][label file][image file], either gzip or
// plain. Any input ends in a dataset or a named error; a dataset is
// consistent with itself.
#include "fuzz_input.h"
#include "systole/dataset.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace systole;
  const fuzz::TwoParts parts = fuzz::split(data, size);
  const std::string labels = fuzz::write_file("labels-idx1-ubyte", parts.first);
  const std::string images = fuzz::write_file("images-idx3-ubyte", parts.second);
  Result<Dataset> dataset = read_idx(images, labels, 0);
  if (!dataset.ok()) {
    if (dataset.status().message().find("images-idx3-ubyte") == std::string::npos &&
        dataset.status().message().find("labels-idx1-ubyte") == std::string::npos)
      fuzz::fail("the error does not name the file: " + dataset.status().to_string());
    return 0;
  }
  if (dataset->values.size() != uint64_t(dataset->examples) * dataset->features ||
      dataset->labels.size() != dataset->examples)
    fuzz::fail("a dataset whose sizes disagree");
  for (float label : dataset->labels)
    if (!(label >= 0 && label < float(dataset->classes))) fuzz::fail("a label out of range");
  return 0;
}
