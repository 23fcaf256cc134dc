// SPDX-License-Identifier: Apache-2.0
// A FeatureSpec of a name, dtype and shape, for tests of the Example schema
// and the input pipeline.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "systole/tf_example.h"

namespace systole::testing {

inline FeatureSpec spec(const std::string& name, FeatureType type, std::vector<uint64_t> shape) {
  FeatureSpec feature;
  feature.name = name;
  feature.type = type;
  feature.shape = std::move(shape);
  return feature;
}

}  // namespace systole::testing
