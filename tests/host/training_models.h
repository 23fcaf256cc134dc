// SPDX-License-Identifier: Apache-2.0
// The small models and data the training tests share: a dense stack, a CNN
// with BatchNormalization and a Transformer block over the same 20 synthetic
// features, and sw_emu devices whose 16x16 array makes a per-replica batch
// of 16 one K tile.
#pragma once

#include <cstdint>
#include <vector>

#include "systole/dataset.h"
#include "systole/driver.h"
#include "systole/model.h"

namespace systole::testing::training {

inline constexpr uint32_t kArray = 16;  // per-replica batch 16 = one K tile

// The dense stack these tests train, and its parameters flattened layer by
// layer as the plain references want them: W (in x out, row-major), then b.
struct MlpShape {
  uint32_t inputs = 20;
  std::vector<uint32_t> hidden = {12, 9};
  uint32_t outputs = 3;

  std::vector<uint32_t> widths() const {
    std::vector<uint32_t> widths{inputs};
    widths.insert(widths.end(), hidden.begin(), hidden.end());
    widths.push_back(outputs);
    return widths;
  }
  uint32_t layers() const { return uint32_t(hidden.size()) + 1; }
  ModelSpec spec() const { return dense_stack(inputs, hidden, outputs); }
};

inline MlpShape small_shape() { return MlpShape(); }

// A learnable synthetic set: labels are the arg-max of a fixed linear map.
Dataset synthetic(uint32_t examples, uint32_t seed);

// The whole data set as one batch.
Batch whole(const Dataset& data);

// A sw_emu device of `units` kArray x kArray units, one thread each.
Device open_device(uint32_t units, EmuEngine engine = EmuEngine::kFast);

// A small Transformer encoder block over the synthetic data's 20 features
// as 4 positions of 5; its products all run on the array.
ModelSpec transformer_block();

// A CNN with BatchNormalization, its 20 features read as 4 x 5 images.
ModelSpec cnn_spec(bool sync);

// The TPU guide's CNN in small, over the same images: two convolutions
// (the second without a ReLU, so that with placement: device its output
// stays on the card), Flatten and two dense layers.
ModelSpec guide_cnn_spec();

// Three convolutions over the same images whose input gradients take the
// three ways: a 2x3 kernel padded `same` on one side only, its gradient
// coming from BatchNormalization on the host; one of strides 2, its
// gradient read from the card through a Flatten.
ModelSpec padded_cnn_spec();

}  // namespace systole::testing::training
