// SPDX-License-Identifier: Apache-2.0
// What the layer files share: initialisers, the ReLU mask, the fused
// activation field, and the make_ functions registry.cpp lists.
#pragma once

#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "systole/layer.h"

namespace systole {

// Glorot (Xavier) uniform, Keras' default kernel initialiser: `count`
// values in U(-limit, limit), limit = sqrt(6 / (fan_in + fan_out)), handed
// to set(i, value) in draw order.
template <class Set>
void glorot_uniform(std::mt19937_64& rng, uint64_t fan_in, uint64_t fan_out, uint64_t count, Set set) {
  const float limit = std::sqrt(6.0f / float(fan_in + fan_out));
  std::uniform_real_distribution<float> uniform(-limit, limit);
  for (uint64_t i = 0; i < count; ++i) set(std::size_t(i), uniform(rng));
}

// dL/dz of a ReLU output into `masked` (reused, so that large gradients
// do not take fresh pages every step): the gradient where the output is
// > 0, else 0 (matmul.h's relu_mask).
inline void relu_mask(const std::vector<float>& gradient, const std::vector<float>& output,
                      std::vector<float>& masked) {
  masked.resize(gradient.size());
  relu_mask(gradient.data(), output.data(), gradient.size(), masked.data());
}

// A bad argument or input of a layer; the caller says where.
inline Status invalid(const std::string& message) { return Status(StatusCode::kInvalidArgument, message); }

// `activation: relu | linear` of a layer whose product can fuse the ReLU.
inline Result<bool> fused_relu(LayerArgs& args) {
  auto activation = args.choice("activation", {"relu", "linear"}, "linear");
  if (!activation.ok()) return activation.status();
  return *activation == "relu";
}

Result<std::unique_ptr<Layer>> make_dense(LayerArgs& args);
Result<std::unique_ptr<Layer>> make_conv2d(LayerArgs& args);
Result<std::unique_ptr<Layer>> make_max_pooling2d(LayerArgs& args);
Result<std::unique_ptr<Layer>> make_flatten(LayerArgs& args);
Result<std::unique_ptr<Layer>> make_batch_normalization(LayerArgs& args);
Result<std::unique_ptr<Layer>> make_dropout(LayerArgs& args);
Result<std::unique_ptr<Layer>> make_relu(LayerArgs& args);
Result<std::unique_ptr<Layer>> make_embedding(LayerArgs& args);
Result<std::unique_ptr<Layer>> make_dot(LayerArgs& args);
Result<std::unique_ptr<Layer>> make_add(LayerArgs& args);
Result<std::unique_ptr<Layer>> make_reshape(LayerArgs& args);
Result<std::unique_ptr<Layer>> make_layer_normalization(LayerArgs& args);
Result<std::unique_ptr<Layer>> make_gelu(LayerArgs& args);
Result<std::unique_ptr<Layer>> make_softmax(LayerArgs& args);
Result<std::unique_ptr<Layer>> make_position_embedding(LayerArgs& args);
Result<std::unique_ptr<Layer>> make_global_average_pooling1d(LayerArgs& args);
Result<std::unique_ptr<Layer>> make_multi_head_attention(LayerArgs& args);

}  // namespace systole
