// SPDX-License-Identifier: Apache-2.0
// The small models, batches and passes the layer and graph tests share:
// a model of every layer type behind a layer with weights, a random batch,
// a training pass's mean loss (and gradients) through any executor, and a
// one-unit sw_emu device.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "systole/driver.h"
#include "systole/matmul.h"
#include "systole/model.h"

namespace systole::testing::layers {

struct Case {
  const char* name;
  ModelSpec spec;
};

LayerConfig layer(const std::string& type, std::vector<std::pair<std::string, std::string>> fields = {});

// Small models that put every layer type behind a layer with weights, so
// that each one's input gradient is checked too. Sizes are awkward on
// purpose (odd, strided, asymmetric padding).
std::vector<Case> cases();

struct Batch {
  std::vector<float> inputs;
  std::vector<float> labels;
  uint32_t size = 0;
};

// `size` examples of uniform inputs in [-1, 1) and random labels.
Batch random_batch(const ModelSpec& spec, uint32_t size, uint32_t seed);

// Mean loss of a training-mode forward pass; with `gradients`, the
// backward pass fills the store's gradients.
double loss(Model& model, MatmulExecutor& matmul, const Batch& batch, bool gradients);

// A sw_emu device of one size x size unit (16 MiB banks).
Device open_sw_emu(uint32_t size);

}  // namespace systole::testing::layers
