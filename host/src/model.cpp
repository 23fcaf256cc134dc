// SPDX-License-Identifier: Apache-2.0
// The Sequential model: building layers from their configs, the passes, the
// loss, and the model's description.
#include "systole/model.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

namespace systole {

std::string ModelSpec::to_json() const {
  nlohmann::json layer_list = nlohmann::json::array();
  for (const LayerConfig& layer : layers) {
    nlohmann::json entry = {{"type", layer.type}};
    for (const auto& [key, value] : layer.fields) entry[key] = value;
    layer_list.push_back(entry);
  }
  return nlohmann::json{{"input_shape", input_shape}, {"classes", classes}, {"layers", layer_list}}.dump();
}

Result<ModelSpec> ModelSpec::from_json(const std::string& text) {
  try {
    const nlohmann::json json = nlohmann::json::parse(text);
    ModelSpec spec;
    spec.input_shape = json.at("input_shape").get<Shape>();
    spec.classes = json.at("classes").get<uint32_t>();
    for (const nlohmann::json& entry : json.at("layers")) {
      LayerConfig layer;
      for (auto it = entry.begin(); it != entry.end(); ++it) {
        if (it.key() == "type")
          layer.type = it->get<std::string>();
        else
          layer.fields.emplace_back(it.key(), it->get<std::string>());
      }
      spec.layers.push_back(std::move(layer));
    }
    return spec;
  } catch (const nlohmann::json::exception& e) {
    return Status(StatusCode::kDataLoss, std::string("model description is malformed (") + e.what() + ")");
  }
}

ModelSpec dense_stack(uint32_t inputs, const std::vector<uint32_t>& hidden, uint32_t classes) {
  ModelSpec spec;
  spec.input_shape = {inputs};
  spec.classes = classes;
  for (uint32_t width : hidden)
    spec.layers.push_back({"dense", {{"units", std::to_string(width)}, {"activation", "relu"}}});
  spec.layers.push_back({"dense", {{"units", std::to_string(classes)}}});
  return spec;
}

StepResult& StepResult::operator+=(const StepResult& other) {
  loss_sum += other.loss_sum;
  examples += other.examples;
  if (metric_sums.size() < other.metric_sums.size()) metric_sums.resize(other.metric_sums.size(), 0.0);
  for (std::size_t i = 0; i < other.metric_sums.size(); ++i) metric_sums[i] += other.metric_sums[i];
  return *this;
}

Result<std::unique_ptr<Sequential>> Sequential::build(const ModelSpec& spec, uint64_t seed) {
  auto invalid = [](const std::string& message) { return Status(StatusCode::kInvalidArgument, message); };
  if (spec.input_shape.empty() || spec.input_shape.size() > 3 ||
      std::count(spec.input_shape.begin(), spec.input_shape.end(), 0u) ||
      shape_elements(spec.input_shape) > (1u << 30))
    return invalid("model.input_shape: expected 1 to 3 positive sizes, got " + shape_text(spec.input_shape));
  if (spec.input_shape.size() == 2)
    return invalid("model.input_shape: expected [features] or [height, width, channels], got " +
                   shape_text(spec.input_shape));
  if (spec.classes < 1) return invalid("model.classes: expected the width of the output, at least 1");
  if (spec.layers.empty()) return invalid("model.layers: the model has no layers");

  std::unique_ptr<Sequential> model(new Sequential());
  model->spec_ = spec;
  Shape shape = spec.input_shape;
  LayerSite site;
  for (uint32_t i = 0; i < spec.layers.size(); ++i) {
    const std::string where = "model.layers[" + std::to_string(i) + "]";
    auto layer = make_layer(spec.layers[i]);
    if (!layer.ok()) return Status(layer.status().code(), where + "." + layer.status().message());
    site.index = i;
    if ((*layer)->min_inputs() > 1)
      return invalid(where + " (" + spec.layers[i].type + "): takes " +
                     std::to_string((*layer)->min_inputs()) +
                     " or more inputs; a Sequential model gives each layer one");
    auto next = (*layer)->build({shape}, site, model->store_);
    if (!next.ok())
      return Status(next.status().code(),
                    where + " (" + spec.layers[i].type + "): " + next.status().message());
    if (shape_elements(*next) == 0 || shape_elements(*next) > (1u << 30))
      return invalid(where + " (" + spec.layers[i].type + "): output shape " + shape_text(*next) +
                     " is empty or too large");
    shape = *next;
    model->shapes_.push_back(shape);
    site.torch_index += (*layer)->torch_modules();
    model->layers_.push_back(std::move(layer).value());
  }
  if (shape != Shape{spec.classes})
    return invalid("model.layers[" + std::to_string(spec.layers.size() - 1) + "]: the model ends in " +
                   shape_text(shape) + ", expected " + shape_text({spec.classes}) +
                   " logits (a dense layer with units: " + std::to_string(spec.classes) +
                   " and no activation)");
  std::mt19937_64 rng(seed);
  for (const auto& layer : model->layers_) layer->initialize(model->store_, rng);
  model->activations_.resize(model->layers_.size() + 1);
  return model;
}

Status Sequential::forward(LayerContext& context, const float* inputs, uint32_t batch, std::size_t layers) {
  Activations& input = activations_[0];
  input.batch = batch;
  input.shape = spec_.input_shape;
  input.values.assign(inputs, inputs + std::size_t(batch) * shape_elements(spec_.input_shape));
  for (std::size_t i = 0; i < std::min(layers, layers_.size()); ++i)
    SYSTOLE_RETURN_IF_ERROR(layers_[i]->forward(context, store_, {&activations_[i]}, activations_[i + 1]));
  return ok_status();
}

Status Sequential::backward(LayerContext& context, const std::vector<float>& logits_gradient) {
  gradient_.batch = activations_.back().batch;
  gradient_.shape = activations_.back().shape;
  gradient_.values = logits_gradient;
  for (std::size_t i = layers_.size(); i-- > 0;) {
    SYSTOLE_RETURN_IF_ERROR(layers_[i]->backward(context, store_, {&activations_[i]}, activations_[i + 1],
                                                 gradient_, {i > 0 ? &next_gradient_ : nullptr}));
    std::swap(gradient_, next_gradient_);
  }
  return ok_status();
}

std::string Sequential::summary() const {
  std::string text;
  uint32_t torch_index = 0;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    uint64_t count = 0;
    const std::string prefix = std::to_string(torch_index) + ".";
    for (const ParameterStore::Entry& entry : store_.entries()) {
      const uint32_t modules = layers_[i]->torch_modules();
      const std::size_t dot = entry.name.find('.');
      const uint32_t owner = uint32_t(std::stoul(entry.name.substr(0, dot)));
      if (entry.optimized() && owner >= torch_index && owner < torch_index + modules) count += entry.size;
    }
    char line[160];
    std::snprintf(line, sizeof line, "  %2zu %-20s %-16s %10llu params\n", i, spec_.layers[i].type.c_str(),
                  shape_text(shapes_[i]).c_str(), (unsigned long long)count);
    text += line;
    torch_index += layers_[i]->torch_modules();
  }
  return text;
}

std::string Sequential::torch_code() const {
  std::string code = "torch.nn.Sequential(";
  for (std::size_t i = 0; i < layers_.size(); ++i) code += (i ? ", " : "") + layers_[i]->torch_code();
  return code + ")";
}

}  // namespace systole
