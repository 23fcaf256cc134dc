// SPDX-License-Identifier: Apache-2.0
// Rounding host operands to bf16 for staging (round_to_bf16, in matmul.h,
// is its public form).
#pragma once

#include <cstdint>
#include <vector>

namespace systole {

// rows x cols of op(X) as bf16, row-major, from X (rows x cols, or cols x
// rows when transposed; `stride` elements from one stored row to the next),
// rounded on up to `threads` threads. A transpose goes through `scratch` in
// fp32 so that the conversion runs over contiguous arrays.
void to_bf16(const float* x, uint32_t rows, uint32_t cols, bool transposed, uint32_t stride,
             std::vector<float>& scratch, uint16_t* out, uint32_t threads);

}  // namespace systole
