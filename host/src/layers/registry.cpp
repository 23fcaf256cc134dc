// SPDX-License-Identifier: Apache-2.0
// The layer types a config can name: the built-in ones, and those a program
// registers.
#include "../registry.h"
#include "layer_kit.h"

namespace systole {
namespace {

Registry<LayerFactory>& layer_registry() {
  static Registry<LayerFactory> registry("layer type",
                                         {
                                             {"dense", make_dense},
                                             {"conv2d", make_conv2d},
                                             {"max_pooling2d", make_max_pooling2d},
                                             {"flatten", make_flatten},
                                             {"batch_normalization", make_batch_normalization},
                                             {"dropout", make_dropout},
                                             {"relu", make_relu},
                                             {"embedding", make_embedding},
                                             {"dot", make_dot},
                                             {"add", make_add},
                                             {"reshape", make_reshape},
                                             {"layer_normalization", make_layer_normalization},
                                             {"gelu", make_gelu},
                                             {"softmax", make_softmax},
                                             {"position_embedding", make_position_embedding},
                                             {"global_average_pooling1d", make_global_average_pooling1d},
                                             {"multi_head_attention", make_multi_head_attention},
                                         });
  return registry;
}

}  // namespace

Status register_layer(const std::string& type, LayerFactory factory) {
  return layer_registry().add(type, std::move(factory));
}

std::vector<std::string> layer_types() { return layer_registry().names(); }

Result<std::unique_ptr<Layer>> make_layer(const LayerConfig& config) {
  return make_from_config<Layer>(layer_registry(), config);
}

}  // namespace systole
