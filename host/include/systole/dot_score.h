// SPDX-License-Identifier: Apache-2.0
// The score of a `dot` layer (two towers) on its two vectors, shared by the
// layer and by whatever ranks candidates with the towers' outputs.
#pragma once

#include <cstdint>

#include "systole/layer.h"
#include "systole/status.h"

namespace systole {

struct DotScore {
  uint32_t width = 0;     // the towers' vector length d
  bool row_bias = false;  // the last value of each vector is that row's bias

  // <x0, x1> over d values; with row biases <x0, x1> over the first d - 1
  // plus x0[d-1] + x1[d-1]. The layer's global bias is not included.
  float operator()(const float* x0, const float* x1) const {
    const uint32_t factors = row_bias ? width - 1 : width;
    float s = 0.0f;
    for (uint32_t j = 0; j < factors; ++j) s += x0[j] * x1[j];
    if (row_bias) s += x0[factors] + x1[factors];
    return s;
  }
};

// The score of the dot layer `config` on towers of `width` values; an
// error if `config` is not a dot layer or its fields are wrong.
Result<DotScore> dot_score(const LayerConfig& config, uint32_t width);

}  // namespace systole
