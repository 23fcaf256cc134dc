// SPDX-License-Identifier: Apache-2.0
#include "host/layer_models.h"

#include <gtest/gtest.h>

#include <random>

#include "systole/loss.h"

namespace systole::testing::layers {

LayerConfig layer(const std::string& type, std::vector<std::pair<std::string, std::string>> fields) {
  return {type, std::move(fields)};
}

std::vector<Case> cases() {
  return {
      {"dense_relu",
       {{6},
        3,
        {layer("dense", {{"units", "5"}, {"activation", "relu"}}), layer("dense", {{"units", "4"}}),
         layer("relu"), layer("dense", {{"units", "3"}})}}},
      {"conv_pool",
       {{5, 5, 2},
        3,
        {layer("conv2d",
               {{"filters", "3"}, {"kernel_size", "3"}, {"padding", "same"}, {"activation", "relu"}}),
         layer("max_pooling2d", {{"pool_size", "2"}}), layer("flatten"), layer("dense", {{"units", "3"}})}}},
      {"conv_strided",
       {{6, 5, 1},
        3,
        {layer("conv2d",
               {{"filters", "2"}, {"kernel_size", "[3, 2]"}, {"strides", "2"}, {"padding", "same"}}),
         layer("conv2d",
               {{"filters", "2"}, {"kernel_size", "2"}, {"activation", "relu"}, {"use_bias", "false"}}),
         layer("flatten"), layer("dense", {{"units", "3"}})}}},
      {"dense_batch_norm",
       {{6},
        3,
        {layer("dense", {{"units", "5"}}), layer("batch_normalization"), layer("relu"),
         layer("dense", {{"units", "3"}})}}},
      {"conv_batch_norm",
       {{4, 4, 1},
        3,
        {layer("conv2d", {{"filters", "3"}, {"kernel_size", "3"}, {"padding", "same"}}),
         layer("batch_normalization", {{"momentum", "0.9"}}), layer("flatten"),
         layer("dense", {{"units", "3"}})}}},
      {"dropout",
       {{6},
        3,
        {layer("dense", {{"units", "8"}, {"activation", "relu"}}), layer("dropout", {{"rate", "0.4"}}),
         layer("dense", {{"units", "3"}})}}},
      // Graphs: a residual block, whose first output feeds two layers (its
      // gradient is the sum of both), and a three-way add that takes one
      // tensor twice and the model's input once.
      {"residual_graph",
       {{6},
        3,
        {layer("dense", {{"name", "d1"}, {"units", "5"}, {"activation", "relu"}}),
         layer("dense", {{"name", "d2"}, {"units", "5"}, {"inputs", "d1"}}),
         layer("add", {{"name", "join"}, {"inputs", "[d2, d1]"}}), layer("relu", {{"inputs", "join"}}),
         layer("dense", {{"units", "3"}, {"inputs", "relu"}})}}},
      // A Transformer's host-side layers on [positions, width] rows: token
      // vectors plus learned positions, layer normalisation, both GELUs, a
      // softmax and the mean over positions.
      {"sequence_layers",
       {{12},
        3,
        {layer("reshape", {{"target_shape", "[4, 3]"}}), layer("dense", {{"name", "tokens"}, {"units", "5"}}),
         layer("position_embedding", {{"name", "positions"}, {"sequence_length", "6"}}),
         layer("add", {{"inputs", "[tokens, positions]"}}),
         layer("layer_normalization", {{"epsilon", "1e-5"}}), layer("gelu"), layer("dense", {{"units", "5"}}),
         layer("gelu", {{"approximate", "true"}}), layer("softmax"), layer("global_average_pooling1d"),
         layer("dense", {{"units", "3"}})}}},
      // A Transformer block: self-attention (2 heads, key_dim from the
      // width) with a residual join and layer normalisation; then causal
      // attention with explicit key_dim and value_dim, no biases and
      // dropout on the attention probabilities.
      {"attention_block",
       {{12},
        3,
        {layer("reshape", {{"target_shape", "[4, 3]"}}), layer("dense", {{"name", "tokens"}, {"units", "4"}}),
         layer("multi_head_attention", {{"name", "attention"}, {"num_heads", "2"}}),
         layer("add", {{"inputs", "[tokens, attention]"}}), layer("layer_normalization"),
         layer("multi_head_attention", {{"num_heads", "3"},
                                        {"key_dim", "2"},
                                        {"value_dim", "3"},
                                        {"use_bias", "false"},
                                        {"causal", "true"},
                                        {"dropout", "0.3"}}),
         layer("global_average_pooling1d"), layer("dense", {{"units", "3"}})}}},
      {"repeated_inputs_graph",
       {{6},
        3,
        {layer("dense", {{"name", "d1"}, {"units", "6"}, {"inputs", "input"}}),
         layer("add", {{"inputs", "[d1, input, d1]"}}), layer("dense", {{"units", "3"}})}}},
  };
}

Batch random_batch(const ModelSpec& spec, uint32_t size, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  Batch batch;
  batch.size = size;
  batch.inputs.resize(size * shape_elements(spec.input_shape));
  for (float& x : batch.inputs) x = uniform(rng);
  for (uint32_t i = 0; i < size; ++i) batch.labels.push_back(float(rng() % spec.classes));
  return batch;
}

double loss(Model& model, MatmulExecutor& matmul, const Batch& batch, bool gradients) {
  LayerContext context;
  context.matmul = &matmul;
  context.training = true;
  context.seed = 7;
  context.step = 3;
  EXPECT_TRUE(model.forward(context, batch.inputs.data(), batch.size).ok());
  std::vector<float> logits_gradient;
  const double loss_sum = make_loss({"sparse_categorical_crossentropy", {}})
                              .value()
                              ->compute(model.logits(), batch.labels.data(), 1, float(batch.size),
                                        gradients ? &logits_gradient : nullptr)
                              .value();
  if (gradients) {
    EXPECT_TRUE(model.backward(context, logits_gradient).ok());
  }
  return loss_sum / batch.size;
}

Device open_sw_emu(uint32_t size) {
  DeviceOptions options;
  options.array_rows = options.array_cols = size;
  options.threads_per_unit = 1;
  options.hbm_banks = 4;
  options.bank_bytes = 16 << 20;
  auto device = Device::open("sw_emu", 0, options);
  EXPECT_TRUE(device.ok()) << device.status().to_string();
  return device.ok() ? *device : Device();
}

}  // namespace systole::testing::layers
