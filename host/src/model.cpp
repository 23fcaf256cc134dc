// SPDX-License-Identifier: Apache-2.0
// The model: a graph of layers built from their configs (a list being the
// chain special case), its passes, and its description.
#include "systole/model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

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

namespace {

// "[a, b]", "a" -> {"a", "b"}, {"a"}: a layer's `inputs` as the config
// writes them.
std::vector<std::string> name_list(const std::string& text) {
  std::string inner = text;
  if (inner.size() >= 2 && inner.front() == '[' && inner.back() == ']')
    inner = inner.substr(1, inner.size() - 2);
  std::vector<std::string> names;
  std::size_t start = 0;
  while (start <= inner.size()) {
    const std::size_t comma = std::min(inner.find(',', start), inner.size());
    std::string name = inner.substr(start, comma - start);
    name.erase(0, name.find_first_not_of(' '));
    name.erase(name.find_last_not_of(' ') + 1);
    if (!name.empty()) names.push_back(name);
    start = comma + 1;
  }
  return names;
}

}  // namespace

Result<std::unique_ptr<Model>> Model::build(const ModelSpec& spec, uint64_t seed) {
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

  std::unique_ptr<Model> model(new Model());
  model->spec_ = spec;
  const std::size_t count = spec.layers.size();
  auto where = [](std::size_t i) { return "model.layers[" + std::to_string(i) + "]"; };

  // The layers, their names and the names of their inputs.
  std::vector<std::vector<std::string>> input_names(count);
  std::vector<LayerConfig> configs(count);
  model->nodes_.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    configs[i].type = spec.layers[i].type;
    for (const auto& [key, value] : spec.layers[i].fields) {
      if (key == "name") {
        model->nodes_[i].name = value;
      } else if (key == "inputs") {
        model->graph_ = true;
        input_names[i] = name_list(value);
        if (input_names[i].empty()) return invalid(where(i) + ".inputs: expected one or more layer names");
      } else {
        configs[i].fields.emplace_back(key, value);
      }
    }
  }
  std::map<std::string, uint32_t> tensor_of = {{"input", 0}};
  if (model->graph_) {
    // Unnamed layers take Keras' names: the type, then type_1, type_2, ...
    std::set<std::string> used;
    for (std::size_t i = 0; i < count; ++i)
      if (!model->nodes_[i].name.empty()) used.insert(model->nodes_[i].name);
    for (std::size_t i = 0; i < count; ++i) {
      std::string& name = model->nodes_[i].name;
      if (!name.empty()) continue;
      const std::string& type = configs[i].type;
      name = type;
      for (uint32_t n = 1; used.count(name); ++n) name = type + "_" + std::to_string(n);
      used.insert(name);
    }
  }
  for (std::size_t i = 0; i < count; ++i) {
    Node& node = model->nodes_[i];
    node.type = configs[i].type;
    if (node.name.empty()) continue;
    if (!tensor_of.emplace(node.name, uint32_t(i + 1)).second)
      return invalid(where(i) + ".name: '" + node.name + "' is taken" +
                     (node.name == "input" ? " (the model's input)" : " by an earlier layer"));
  }
  for (std::size_t i = 0; i < count; ++i) {
    Node& node = model->nodes_[i];
    if (input_names[i].empty()) {
      node.inputs = {uint32_t(i)};  // the previous layer's output, or the model's input
      continue;
    }
    for (const std::string& name : input_names[i]) {
      const auto found = tensor_of.find(name);
      if (found == tensor_of.end()) {
        std::string known;
        for (const auto& [known_name, tensor] : tensor_of) known += (known.empty() ? "" : ", ") + known_name;
        return invalid(where(i) + ".inputs: no layer is called '" + name + "' (there are: " + known + ")");
      }
      node.inputs.push_back(found->second);
    }
  }

  // A topological order, the config's where it is one: repeatedly the first
  // layer (in config order) whose inputs are all computed.
  std::vector<bool> done(count + 1, false), placed(count, false);
  done[0] = true;
  for (std::size_t round = 0; round < count; ++round) {
    std::size_t next = count;
    for (std::size_t i = 0; i < count && next == count; ++i) {
      if (placed[i]) continue;
      bool ready = true;
      for (uint32_t tensor : model->nodes_[i].inputs) ready = ready && done[tensor];
      if (ready) next = i;
    }
    if (next == count) {
      std::string cycle;
      for (std::size_t i = 0; i < count; ++i)
        if (!placed[i]) cycle += (cycle.empty() ? "" : ", ") + model->nodes_[i].name;
      return invalid("model.layers: the inputs of " + cycle + " form a cycle or depend on one");
    }
    placed[next] = done[next + 1] = true;
    model->order_.push_back(uint32_t(next));
  }
  // Every output feeds a layer, but the model's own.
  std::vector<uint32_t> uses(count + 1, 0);
  for (const Node& node : model->nodes_)
    for (uint32_t tensor : node.inputs) ++uses[tensor];
  if (uses[0] == 0) return invalid("model.layers: no layer takes the model's input");
  for (std::size_t i = 0; i + 1 < count; ++i)
    if (uses[i + 1] == 0)
      return invalid(where(i) + " (" + model->nodes_[i].name +
                     "): no layer takes its output, and only the last "
                     "layer's is the model's");

  // Build in the order they run; parameters are named as in PyTorch.
  std::vector<Shape> shapes(count + 1);
  shapes[0] = spec.input_shape;
  // A list runs in config order, so its layers' modules are numbered as
  // torch.nn.Sequential numbers them (a graph names them instead).
  uint32_t torch_index = 0;
  for (uint32_t i : model->order_) {
    Node& node = model->nodes_[i];
    auto layer = make_layer(configs[i]);
    if (!layer.ok()) return Status(layer.status().code(), where(i) + "." + layer.status().message());
    const std::string label = where(i) + " (" + (model->graph_ ? node.name : node.type) + ")";
    const uint32_t arity = uint32_t(node.inputs.size());
    if (arity < (*layer)->min_inputs() || arity > (*layer)->max_inputs()) {
      const uint32_t low = (*layer)->min_inputs(), high = (*layer)->max_inputs();
      const std::string takes = low == high          ? std::to_string(low)
                                : high == UINT32_MAX ? std::to_string(low) + " or more"
                                                     : std::to_string(low) + " to " + std::to_string(high);
      return invalid(
          label + ".inputs: takes " + takes + " input(s), got " + std::to_string(arity) +
          (model->graph_ ? "" : " (a list gives each layer one; name its inputs with inputs: [...])"));
    }
    Shapes inputs;
    for (uint32_t tensor : node.inputs) inputs.push_back(shapes[tensor]);
    LayerSite site;
    site.index = uint32_t(i);
    site.torch_index = torch_index;
    if (model->graph_) site.name = node.name;
    node.first_entry = model->store_.entries().size();
    auto shape = (*layer)->build(inputs, site, model->store_);
    if (!shape.ok()) return Status(shape.status().code(), label + ": " + shape.status().message());
    if (shape_elements(*shape) == 0 || shape_elements(*shape) > (1u << 30))
      return invalid(label + ": output shape " + shape_text(*shape) + " is empty or too large");
    node.entries = model->store_.entries().size() - node.first_entry;
    torch_index += (*layer)->torch_modules();
    node.shape = shapes[i + 1] = *shape;
    node.layer = std::move(layer).value();
    node.scratch.resize(node.inputs.size());
  }
  // A tensor the card may keep: made by a layer that allows it, read once,
  // by a layer of one input that allows it (a dense layer's output that
  // only the next dense layer reads; a convolution's that a Flatten
  // renames for a Dense layer).
  model->card_reader_.assign(count + 1, kNoReader);
  for (uint32_t j = 0; j < count; ++j) {
    const Node& node = model->nodes_[j];
    if (node.inputs.size() != 1 || !node.layer->input_on_card()) continue;
    const uint32_t tensor = node.inputs[0];
    if (tensor != 0 && uses[tensor] == 1 && model->nodes_[tensor - 1].layer->output_on_card())
      model->card_reader_[tensor] = j;
  }
  // Logits: [classes] per example, or [positions, classes] per position of
  // a sequence (a language model's next-token logits).
  const Shape& output = shapes[count];
  if (output != Shape{spec.classes} && !(output.size() == 2 && output[1] == spec.classes))
    return invalid(where(count - 1) + ": the model ends in " + shape_text(output) + ", expected " +
                   shape_text({spec.classes}) + " logits, or [positions, " + std::to_string(spec.classes) +
                   "] (a dense layer with units: " + std::to_string(spec.classes) + " and no activation)");
  std::mt19937_64 rng(seed);
  for (uint32_t i : model->order_) model->nodes_[i].layer->initialize(model->store_, rng);
  model->tensors_.resize(count + 1);
  model->gradients_.resize(count + 1);
  return model;
}

Status Model::forward(LayerContext& context, const float* inputs, uint32_t batch, std::size_t layers) {
  Activations& input = tensors_[0];
  input.batch = batch;
  input.shape = spec_.input_shape;
  input.values.assign(inputs, inputs + std::size_t(batch) * shape_elements(spec_.input_shape));
  // On the card: what the card may keep, when its reader runs in this pass
  // and the host does not read it after (the last tensor of the pass).
  const bool card = context.matmul && context.matmul->keeps_activations();
  const std::size_t last = std::min(layers, nodes_.size());
  for (std::size_t t = 1; t < tensors_.size(); ++t)
    tensors_[t].on_card = card && t != last && card_reader_[t] != kNoReader && card_reader_[t] < layers;
  // A layer that only renames its input there has both tensors on the card
  // or neither (a Flatten between a convolution and a Dense layer).
  for (bool changed = true; changed;) {
    changed = false;
    for (uint32_t i : order_) {
      if (!nodes_[i].layer->renames_on_card()) continue;
      Activations &in = tensors_[nodes_[i].inputs[0]], &out = tensors_[i + 1];
      if (in.on_card == out.on_card) continue;
      in.on_card = out.on_card = false;
      changed = true;
    }
  }
  // A tensor the host holds this pass lets go of what the card held of it.
  for (Activations& tensor : tensors_)
    if (!tensor.on_card) tensor.card = DeviceTensor();
  for (uint32_t i : order_) {
    if (i >= layers) continue;
    Node& node = nodes_[i];
    std::vector<const Activations*> tensors;
    for (uint32_t tensor : node.inputs) {
      if (tensor > layers)
        return Status(StatusCode::kInvalidArgument, "the first " + std::to_string(layers) +
                                                        " layers take the output of layer " +
                                                        std::to_string(tensor - 1));
      tensors.push_back(&tensors_[tensor]);
    }
    Activations& output = tensors_[i + 1];
    output.mask.clear();
    SYSTOLE_RETURN_IF_ERROR(node.layer->forward(context, store_, Inputs(tensors), output));
    if (output.mask.empty() && node.layer->passes_mask()) carry_mask(tensors, output);
  }
  return ok_status();
}

// Keras' mask propagation: an output that keeps its inputs' positions
// (rank 2 or more, the same first dimension) gets the positions every
// masked input holds a token at; inputs without a mask count as all tokens.
void Model::carry_mask(const std::vector<const Activations*>& inputs, Activations& output) {
  if (output.shape.size() < 2) return;
  for (const Activations* input : inputs) {
    if (input->mask.empty() || input->shape.empty() || input->shape[0] != output.shape[0]) continue;
    if (output.mask.empty()) {
      output.mask = input->mask;
    } else {
      for (std::size_t p = 0; p < output.mask.size(); ++p) output.mask[p] &= input->mask[p];
    }
  }
}

Status Model::backward(LayerContext& context, const std::vector<float>& logits_gradient) {
  reached_.assign(tensors_.size(), false);
  for (std::size_t t = 0; t < tensors_.size(); ++t) {
    gradients_[t].on_card = tensors_[t].on_card;
    if (!gradients_[t].on_card) gradients_[t].card = DeviceTensor();
  }
  Activations& top = gradients_.back();
  top.batch = tensors_.back().batch;
  top.shape = tensors_.back().shape;
  top.values = logits_gradient;
  reached_.back() = true;
  for (auto at = order_.rbegin(); at != order_.rend(); ++at) {
    Node& node = nodes_[*at];
    // The first gradient into a tensor is written in place; any later one
    // goes to scratch and is added after, in this fixed order.
    std::vector<Activations*> targets(node.inputs.size(), nullptr);
    std::vector<bool> added(node.inputs.size(), false);
    for (std::size_t k = 0; k < node.inputs.size(); ++k) {
      const uint32_t tensor = node.inputs[k];
      if (tensor == 0) continue;  // the model's input needs none
      if (reached_[tensor]) {
        targets[k] = &node.scratch[k];
        added[k] = true;
      } else {
        targets[k] = &gradients_[tensor];
        reached_[tensor] = true;
      }
    }
    std::vector<const Activations*> inputs;
    for (uint32_t tensor : node.inputs) inputs.push_back(&tensors_[tensor]);
    SYSTOLE_RETURN_IF_ERROR(node.layer->backward(context, store_, Inputs(std::move(inputs)),
                                                 tensors_[*at + 1], gradients_[*at + 1],
                                                 InputGradients(targets)));
    for (std::size_t k = 0; k < node.inputs.size(); ++k) {
      if (!added[k]) continue;
      std::vector<float>& sum = gradients_[node.inputs[k]].values;
      const std::vector<float>& more = node.scratch[k].values;
      for (std::size_t v = 0; v < sum.size(); ++v) sum[v] += more[v];
    }
  }
  return ok_status();
}

std::string Model::summary() const {
  std::vector<std::string> labels;
  std::size_t label_width = 20, shape_width = 16;
  for (const Node& node : nodes_) {
    labels.push_back(graph_ ? node.name + " (" + node.type + ")" : node.type);
    label_width = std::max(label_width, labels.back().size());
    shape_width = std::max(shape_width, shape_text(node.shape).size());
  }
  std::string text;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const Node& node = nodes_[i];
    uint64_t count = 0;
    for (std::size_t e = node.first_entry; e < node.first_entry + node.entries; ++e)
      if (store_.entries()[e].optimized()) count += store_.entries()[e].size;
    std::string inputs;
    if (graph_)
      for (uint32_t tensor : node.inputs)
        inputs +=
            (inputs.empty() ? " <- " : ", ") + (tensor == 0 ? std::string("input") : nodes_[tensor - 1].name);
    std::vector<char> line(label_width + shape_width + 40);
    std::snprintf(line.data(), line.size(), "  %2zu %-*s %-*s %10llu params", i, int(label_width),
                  labels[i].c_str(), int(shape_width), shape_text(node.shape).c_str(),
                  (unsigned long long)count);
    text += line.data() + inputs + "\n";
  }
  return text;
}

std::string Model::torch_code() const {
  if (!graph_) {
    std::string code = "torch.nn.Sequential(";
    for (std::size_t i = 0; i < nodes_.size(); ++i) code += (i ? ", " : "") + nodes_[i].layer->torch_code();
    return code + ")";
  }
  std::string code;
  for (const Node& node : nodes_)
    code += (code.empty() ? "" : "; ") + node.name + ": " + node.layer->torch_code();
  return code;
}

}  // namespace systole
