// SPDX-License-Identifier: Apache-2.0
// A regular file's bytes, whole (accel_data's inputs: package lists,
// fortunes).
#pragma once

#include <string>

#include "systole/status.h"

namespace systole {

// The file's bytes; an error names the file when it cannot be opened or is
// not a regular file (a directory, a device).
Result<std::string> read_regular_file(const std::string& path);

}  // namespace systole
