// SPDX-License-Identifier: Apache-2.0
// TensorBoard event files: read_event_file either lists the scalars and the
// other summaries or ends with an error naming the file, and reading the
// scalars alone gives the same answer and the same scalars.
#include <cmath>

#include "fuzz_input.h"
#include "systole/summary_writer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace systole;
  const std::string path =
      fuzz::write_file("events.out.tfevents", {reinterpret_cast<const char*>(data), size});
  Result<EventFileContents> contents = read_event_file(path);
  Result<std::vector<ScalarEvent>> scalars = read_scalar_events(path);
  if (contents.ok() != scalars.ok())
    fuzz::fail("read_event_file and read_scalar_events disagree on the file");
  if (!contents.ok()) {
    if (contents.status().message().find(path) == std::string::npos)
      fuzz::fail("an error that does not name the file: " + contents.status().message());
    return 0;
  }
  if (contents->scalars.size() != scalars->size()) fuzz::fail("a different number of scalars");
  for (std::size_t i = 0; i < scalars->size(); ++i) {
    const ScalarEvent& a = contents->scalars[i];
    const ScalarEvent& b = (*scalars)[i];
    if (a.tag != b.tag || a.step != b.step ||
        !(a.value == b.value || (std::isnan(a.value) && std::isnan(b.value))))
      fuzz::fail("scalar " + std::to_string(i) + " differs between the two readers");
  }
  return 0;
}
