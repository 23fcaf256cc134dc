// SPDX-License-Identifier: Apache-2.0
// The layer types a config can name: the one table to extend.
#include "layer_kit.h"

namespace systole {
namespace {

struct LayerType {
  const char* name;
  Result<std::unique_ptr<Layer>> (*make)(LayerArgs& args);
};

constexpr LayerType kLayerTypes[] = {
    {"dense", make_dense},
    {"conv2d", make_conv2d},
    {"max_pooling2d", make_max_pooling2d},
    {"flatten", make_flatten},
    {"batch_normalization", make_batch_normalization},
    {"dropout", make_dropout},
    {"relu", make_relu},
    {"embedding", make_embedding},
    {"dot", make_dot},
};

}  // namespace

std::vector<std::string> layer_types() {
  std::vector<std::string> names;
  for (const LayerType& type : kLayerTypes) names.push_back(type.name);
  return names;
}

Result<std::unique_ptr<Layer>> make_layer(const LayerConfig& config) {
  for (const LayerType& type : kLayerTypes) {
    if (config.type != type.name) continue;
    LayerArgs args(config);
    auto layer = type.make(args);
    if (!layer.ok()) return layer.status();
    SYSTOLE_RETURN_IF_ERROR(args.unknown_fields());
    return layer;
  }
  std::string known;
  for (const LayerType& type : kLayerTypes) known += (known.empty() ? "" : ", ") + std::string(type.name);
  return Status(StatusCode::kInvalidArgument,
                "type: unknown layer type '" + config.type + "' (expected one of " + known + ")");
}

}  // namespace systole
