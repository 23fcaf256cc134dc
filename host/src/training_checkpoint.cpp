// SPDX-License-Identifier: Apache-2.0
// A training run's checkpoints, and resuming from them.
#include "systole/training_checkpoint.h"

#include <cmath>
#include <utility>

namespace systole {
namespace {

Status finite_values(const Checkpoint& checkpoint, const std::string& path, const char* purpose) {
  for (const Tensor& tensor : checkpoint.tensors)
    for (float value : tensor.values)
      if (!std::isfinite(value))
        return Status(StatusCode::kInvalidArgument, path + ": tensor '" + tensor.name + "' holds " +
                                                        std::to_string(value) + "; a checkpoint " + purpose +
                                                        " must hold finite values");
  return ok_status();
}

// A systole-mlp/1 checkpoint holds a dense stack given by its inputs,
// hidden widths and outputs; it resumes a model that is that stack. Its
// tensors are renamed: layers.<l> was the l-th Linear, module 2l of the
// torch.nn.Sequential.
Status upgrade_legacy(Checkpoint& checkpoint, const std::string& path, const ModelSpec& spec) {
  // The widths that make `spec` a dense stack, if it is one.
  std::vector<uint32_t> hidden;
  for (std::size_t l = 0; l + 1 < spec.layers.size(); ++l)
    for (const auto& [key, value] : spec.layers[l].fields)
      if (key == "units" && value.size() <= 8 && value.find_first_not_of("0123456789") == std::string::npos)
        hidden.push_back(uint32_t(std::stoul(value)));
  const uint32_t inputs = uint32_t(shape_elements(spec.input_shape));
  if (dense_stack(inputs, hidden, spec.classes).to_json() != spec.to_json())
    return Status(StatusCode::kInvalidArgument, path + ": a dense-only (" + kLegacyMlpFormat +
                                                    ") checkpoint; the config's model has layers");
  std::string widths;
  for (uint32_t width : hidden) widths += (widths.empty() ? "" : ",") + std::to_string(width);
  const std::pair<const char*, std::string> expected[] = {
      {"inputs", std::to_string(inputs)}, {"hidden", widths}, {"outputs", std::to_string(spec.classes)}};
  for (const auto& [key, value] : expected) {
    const auto it = checkpoint.metadata.find(key);
    const std::string found = it == checkpoint.metadata.end() ? "(missing)" : it->second;
    if (found != value)
      return Status(StatusCode::kInvalidArgument, path + ": " + key + " is " + found +
                                                      " in the checkpoint but " + value + " in the config");
  }
  for (Tensor& tensor : checkpoint.tensors) {
    const std::size_t at = tensor.name.find("layers.");
    if (at == std::string::npos) continue;
    const std::size_t dot = tensor.name.find('.', at + 7);
    const uint32_t layer = uint32_t(std::stoul(tensor.name.substr(at + 7, dot - at - 7)));
    tensor.name = tensor.name.substr(0, at) + std::to_string(2 * layer) + tensor.name.substr(dot);
  }
  return ok_status();
}

}  // namespace

Checkpoint make_checkpoint(const Trainer& trainer, uint32_t epochs_done) {
  const TrainerConfig& config = trainer.config();
  Checkpoint checkpoint = model_tensors(trainer.parameters(), &trainer.optimizer());
  checkpoint.metadata = {{"format", kCheckpointFormat},
                         {"model", trainer.model().spec().to_json()},
                         {"optimizer", config.optimizer.name},
                         {"optimizer_steps", std::to_string(trainer.optimizer().steps())},
                         {"epochs_done", std::to_string(epochs_done)},
                         {"seed", std::to_string(config.seed)},
                         {"global_batch", std::to_string(config.global_batch)}};
  return checkpoint;
}

Checkpoint make_model_file(const Trainer& trainer) {
  Checkpoint model = model_tensors(trainer.parameters(), nullptr);
  model.metadata = {{"format", kCheckpointFormat},
                    {"model", trainer.model().spec().to_json()},
                    {"torch", trainer.model().torch_code()}};
  return model;
}

Result<uint32_t> resume_from(const std::string& path, Trainer& trainer) {
  auto checkpoint = read_safetensors(path);
  if (!checkpoint.ok()) return checkpoint.status();
  auto meta = [&](const std::string& key) {
    const auto it = checkpoint->metadata.find(key);
    return it == checkpoint->metadata.end() ? std::string("(missing)") : it->second;
  };
  const TrainerConfig& config = trainer.config();
  const ModelSpec& spec = trainer.model().spec();
  if (meta("format") == kLegacyMlpFormat) {
    SYSTOLE_RETURN_IF_ERROR(upgrade_legacy(*checkpoint, path, spec));
  } else if (meta("format") != kCheckpointFormat) {
    return Status(StatusCode::kInvalidArgument,
                  path + ": format is " + meta("format") + ", expected " + kCheckpointFormat);
  } else if (meta("model") != spec.to_json()) {
    return Status(StatusCode::kInvalidArgument, path + ": the checkpoint's model " + meta("model") +
                                                    " differs from the config's " + spec.to_json());
  }
  // The settings that decide what the run computes must be this run's: a
  // checkpoint of another run is refused, not continued. (The replica
  // count is not among them: N replicas compute the bits of one.)
  const std::pair<const char*, std::string> settings[] = {
      {"optimizer", config.optimizer.name},
      {"seed", std::to_string(config.seed)},
      {"global_batch", std::to_string(config.global_batch)}};
  for (const auto& [key, value] : settings)
    if (meta(key) != value)
      return Status(StatusCode::kInvalidArgument, path + ": " + key + " is " + meta(key) +
                                                      " in the checkpoint but " + value + " in this run");
  auto count = [&](const char* key, uint64_t limit) -> Result<uint64_t> {
    const std::string text = meta(key);
    if (text.empty() || text.size() > 19 || text.find_first_not_of("0123456789") != std::string::npos ||
        std::stoull(text) > limit)
      return Status(StatusCode::kInvalidArgument, path + ": metadata " + key + " is '" + text +
                                                      "', not a count up to " + std::to_string(limit));
    return std::stoull(text);
  };
  auto steps = count("optimizer_steps", uint64_t(1) << 53);
  if (!steps.ok()) return steps.status();
  auto epochs_done = count("epochs_done", 1u << 24);
  if (!epochs_done.ok()) return epochs_done.status();
  ModelValues values;
  SYSTOLE_RETURN_IF_ERROR(
      read_model_tensors(*checkpoint, path, trainer.parameters(), trainer.optimizer().state(), values));
  SYSTOLE_RETURN_IF_ERROR(finite_values(*checkpoint, path, "to resume from"));
  SYSTOLE_RETURN_IF_ERROR(trainer.restore(values, *steps));
  return uint32_t(*epochs_done);
}

Status restore_model(const Checkpoint& checkpoint, const std::string& path, Trainer& trainer) {
  ModelValues values;
  SYSTOLE_RETURN_IF_ERROR(read_model_tensors(checkpoint, path, trainer.parameters(), {}, values));
  SYSTOLE_RETURN_IF_ERROR(finite_values(checkpoint, path, "to evaluate or predict with"));
  return trainer.restore(values, 0);
}

Status load_weights(const std::string& path, Trainer& trainer) {
  auto checkpoint = read_safetensors(path);
  if (!checkpoint.ok()) return checkpoint.status();
  ModelValues values;
  SYSTOLE_RETURN_IF_ERROR(read_model_tensors(*checkpoint, path, trainer.parameters(), {}, values));
  SYSTOLE_RETURN_IF_ERROR(finite_values(*checkpoint, path, "to load weights from"));
  // No optimizer state: it goes on from where it is (fresh for a new run).
  return trainer.restore(values, trainer.optimizer().steps());
}

}  // namespace systole
