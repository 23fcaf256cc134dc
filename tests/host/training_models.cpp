// SPDX-License-Identifier: Apache-2.0
#include "training_models.h"

#include <algorithm>
#include <random>

namespace systole::testing::training {

Dataset synthetic(uint32_t examples, uint32_t seed) {
  const MlpShape shape = small_shape();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  std::vector<float> map(shape.inputs * shape.outputs);
  for (float& w : map) w = uniform(rng) - 0.5f;
  Dataset data;
  data.examples = examples;
  data.features = shape.inputs;
  data.classes = shape.outputs;
  for (uint32_t e = 0; e < examples; ++e) {
    std::vector<float> score(shape.outputs, 0.0f);
    for (uint32_t f = 0; f < shape.inputs; ++f) {
      const float x = uniform(rng);
      data.values.push_back(x);
      for (uint32_t c = 0; c < shape.outputs; ++c) score[c] += x * map[f * shape.outputs + c];
    }
    data.labels.push_back(uint8_t(std::max_element(score.begin(), score.end()) - score.begin()));
  }
  return data;
}

Batch whole(const Dataset& data) { return {data.values, data.labels, data.examples, 1}; }

Device open_device(uint32_t units, EmuEngine engine) {
  DeviceOptions options;
  options.array_rows = options.array_cols = kArray;
  options.compute_units = units;
  options.engine = engine;
  options.threads_per_unit = 1;
  options.hbm_banks = 8;
  options.bank_bytes = 4 << 20;
  return Device::open("sw_emu", 0, options).value();
}

ModelSpec transformer_block() {
  ModelSpec block = small_shape().spec();
  block.layers = {{"reshape", {{"target_shape", "[4, 5]"}}},
                  {"dense", {{"name", "tokens"}, {"units", "8"}}},
                  {"multi_head_attention", {{"name", "attention"}, {"num_heads", "2"}}},
                  {"add", {{"inputs", "[tokens, attention]"}}},
                  {"layer_normalization", {}},
                  {"dense", {{"units", "16"}, {"activation", "relu"}}},
                  {"global_average_pooling1d", {}},
                  {"dense", {{"units", "3"}}}};
  return block;
}

ModelSpec cnn_spec(bool sync) {
  ModelSpec spec;
  spec.input_shape = {4, 5, 1};
  spec.classes = 3;
  spec.layers = {{"conv2d", {{"filters", "6"}, {"kernel_size", "3"}, {"padding", "same"}}},
                 {"batch_normalization", {{"sync", sync ? "true" : "false"}}},
                 {"relu", {}},
                 {"max_pooling2d", {{"pool_size", "2"}}},
                 {"flatten", {}},
                 {"dense", {{"units", "3"}}}};
  return spec;
}

ModelSpec guide_cnn_spec() {
  ModelSpec spec;
  spec.input_shape = {4, 5, 1};
  spec.classes = 3;
  spec.layers = {
      {"conv2d", {{"filters", "4"}, {"kernel_size", "3"}, {"padding", "same"}, {"activation", "relu"}}},
      {"conv2d", {{"filters", "5"}, {"kernel_size", "2"}}},
      {"flatten", {}},
      {"dense", {{"units", "6"}, {"activation", "relu"}}},
      {"dense", {{"units", "3"}}}};
  return spec;
}

ModelSpec padded_cnn_spec() {
  ModelSpec spec;
  spec.input_shape = {4, 5, 1};
  spec.classes = 3;
  spec.layers = {
      {"conv2d", {{"filters", "4"}, {"kernel_size", "3"}, {"padding", "same"}, {"activation", "relu"}}},
      {"conv2d", {{"filters", "5"}, {"kernel_size", "[2, 3]"}, {"padding", "same"}}},
      {"batch_normalization", {}},
      {"relu", {}},
      {"conv2d", {{"filters", "3"}, {"kernel_size", "2"}, {"strides", "2"}, {"padding", "same"}}},
      {"flatten", {}},
      {"dense", {{"units", "3"}}}};
  return spec;
}

}  // namespace systole::testing::training
