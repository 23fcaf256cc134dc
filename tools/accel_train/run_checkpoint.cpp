// SPDX-License-Identifier: Apache-2.0
#include "run_checkpoint.h"

#include <cmath>
#include <map>
#include <utility>

namespace systole {
namespace {

// A systole-mlp/1 checkpoint of the same dense stack, its tensors renamed:
// layers.<l> was the l-th Linear, module 2l of the Sequential.
Status upgrade_legacy(Checkpoint& checkpoint, const std::string& path, const TrainConfig& config,
                      const ModelSpec& spec) {
  const std::map<std::string, std::string> expected = {
      {"inputs", std::to_string(shape_elements(spec.input_shape))},
      {"hidden", join(config.hidden, ",")},
      {"outputs", std::to_string(spec.classes)}};
  if (!config.layers.empty())
    return Status(StatusCode::kInvalidArgument, path + ": a dense-only (" + kLegacyMlpFormat +
                                                    ") checkpoint; the config's model has layers");
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

Checkpoint make_checkpoint(const Trainer& trainer, const TrainConfig& config, uint32_t epochs_done) {
  Checkpoint checkpoint = model_tensors(trainer.parameters(), &trainer.optimizer());
  checkpoint.metadata = {{"format", kCheckpointFormat},
                         {"model", trainer.model().spec().to_json()},
                         {"optimizer", config.optimizer},
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

Result<uint32_t> resume_from(const std::string& path, Trainer& trainer, const TrainConfig& config) {
  auto checkpoint = read_safetensors(path);
  if (!checkpoint.ok()) return checkpoint.status();
  auto meta = [&](const std::string& key) {
    const auto it = checkpoint->metadata.find(key);
    return it == checkpoint->metadata.end() ? std::string("(missing)") : it->second;
  };
  const ModelSpec& spec = trainer.model().spec();
  if (meta("format") == kLegacyMlpFormat) {
    SYSTOLE_RETURN_IF_ERROR(upgrade_legacy(*checkpoint, path, config, spec));
  } else if (meta("format") != kCheckpointFormat) {
    return Status(StatusCode::kInvalidArgument,
                  path + ": format is " + meta("format") + ", expected " + kCheckpointFormat);
  } else if (meta("model") != spec.to_json()) {
    return Status(StatusCode::kInvalidArgument, path + ": the checkpoint's model " + meta("model") +
                                                    " differs from the config's " + spec.to_json());
  }
  // The settings that decide what the run computes must be this run's: a
  // checkpoint of another run is refused, not continued.
  const std::pair<const char*, std::string> settings[] = {
      {"optimizer", config.optimizer},
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
  for (const Tensor& tensor : checkpoint->tensors)
    for (float value : tensor.values)
      if (!std::isfinite(value))
        return Status(StatusCode::kInvalidArgument,
                      path + ": tensor '" + tensor.name + "' holds " + std::to_string(value) +
                          "; a checkpoint to resume from must hold finite values");
  SYSTOLE_RETURN_IF_ERROR(trainer.restore(values, *steps));
  return uint32_t(*epochs_done);
}

}  // namespace systole
