// SPDX-License-Identifier: Apache-2.0
// The optimizers the registry starts with.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "systole/optimizer.h"

namespace systole {

std::vector<std::pair<std::string, OptimizerFactory>> builtin_optimizers();

}  // namespace systole
