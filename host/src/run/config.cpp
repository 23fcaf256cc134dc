// SPDX-License-Identifier: Apache-2.0
// accel_train's configuration: reading a file, the checks, the settings
// the job shares and the trainer's.
#include "systole/run/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>

#include "config_schema.h"
#include "config_value.h"

namespace systole {

namespace {

// A YAML tag ("!!str 3", "!x") is refused where it stands: the fields
// read plain values, and a tag would be dropped without a word (a tag with
// nothing after it reads as an empty value). yaml-cpp tags an untagged
// plain value "?" and a quoted one "!".
Status check_untagged(const YAML::Node& node, const std::string& where) {
  std::string tag = node.Tag();
  if (tag.empty() || tag == "?" || tag == "!") return ok_status();
  const std::string core = "tag:yaml.org,2002:";  // what "!!int" resolves to
  if (tag.compare(0, core.size(), core) == 0) tag = "!!" + tag.substr(core.size());
  return Status(StatusCode::kInvalidArgument,
                (where.empty() ? std::string("the file") : where) + ": YAML tags are not read (line " +
                    std::to_string(node.Mark().line + 1) + " has '" + tag + "')");
}

// YAML keys are unique within a mapping, but yaml-cpp keeps both entries of
// a key given twice and reads the first: a silent choice. A second one is
// an error naming the key's path and both lines. Tags are refused too
// (check_untagged).
Status check_keys_and_tags(const YAML::Node& node, const std::string& where) {
  SYSTOLE_RETURN_IF_ERROR(check_untagged(node, where));
  if (node.IsMap()) {
    std::map<std::string, int> lines;
    for (const auto& item : node) {
      const std::string key = item.first.IsScalar() ? item.first.Scalar() : "?";
      const std::string path = where.empty() ? key : where + "." + key;
      SYSTOLE_RETURN_IF_ERROR(check_untagged(item.first, path));
      const int line = item.first.Mark().line + 1;
      const auto [first, fresh] = lines.emplace(key, line);
      if (!fresh)
        return Status(StatusCode::kInvalidArgument, path + ": given twice, on lines " +
                                                        std::to_string(first->second) + " and " +
                                                        std::to_string(line) + " (a key is given once)");
      SYSTOLE_RETURN_IF_ERROR(check_keys_and_tags(item.second, path));
    }
  } else if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i)
      SYSTOLE_RETURN_IF_ERROR(check_keys_and_tags(node[i], where + "[" + std::to_string(i) + "]"));
  }
  return ok_status();
}

}  // namespace

namespace {

// The fields of a parsed document; errors start with `source`.
Status read_document(const YAML::Node& root, const std::string& source, RunConfig& c) {
  if (root.IsNull()) return ok_status();  // an empty document: all defaults
  Status status = check_keys_and_tags(root, "");
  if (status.ok()) status = read_config_fields(root, c);
  return status.ok() ? status : Status(status.code(), source + ": " + status.message());
}

}  // namespace

Status load_run_config(const std::string& path, RunConfig& c) {
  std::error_code error;
  if (std::filesystem::exists(path, error) && !std::filesystem::is_regular_file(path, error))
    return Status(StatusCode::kInvalidArgument, path + ": not a regular file");
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    return Status(StatusCode::kNotFound, path + ": cannot open");
  } catch (const YAML::Exception& e) {
    return Status(StatusCode::kInvalidArgument, path + ": " + e.what());
  }
  return read_document(root, path, c);
}

Status parse_run_config(const std::string& text, const std::string& source, RunConfig& c) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return Status(StatusCode::kInvalidArgument, source + ": " + e.what());
  }
  return read_document(root, source, c);
}

Status validate_run_config(const RunConfig& c) {
  auto invalid = [](const std::string& message) { return Status(StatusCode::kInvalidArgument, message); };
  SYSTOLE_RETURN_IF_ERROR(check_config_fields(c));
  // The rules between fields.
  if (c.ranking && (c.data_format != "tfrecord" || c.test_files.empty() || c.inputs.size() != 2))
    return invalid("ranking: needs data.format tfrecord, data.test and data.inputs [user, item]");
  if ((c.schedule == "exponential" || c.schedule == "step") && c.decay_steps == 0)
    return invalid("train.decay_steps: the " + c.schedule + " schedule needs decay_steps >= 1");
  if (c.clipnorm > 0 && c.global_clipnorm > 0)
    return invalid("train.clipnorm and train.global_clipnorm: set at most one of them");
  // A monitored value must be one the logs will hold.
  std::vector<std::string> logged = {"loss"};
  for (const MetricConfig& metric : c.metrics)
    if (auto made = make_metric(metric); made.ok()) logged.push_back((*made)->name());
  const std::size_t train_values = logged.size();
  for (std::size_t i = 0; i < train_values; ++i) logged.push_back("val_" + logged[i]);
  auto check_monitor = [&](const char* key, const std::string& monitor) {
    if (std::find(logged.begin(), logged.end(), monitor) != logged.end()) return ok_status();
    std::string names;
    for (const std::string& name : logged) names += (names.empty() ? "" : ", ") + name;
    return invalid(std::string(key) + ": expected one of " + names + ", got '" + monitor + "'");
  };
  if (c.early_stopping)
    SYSTOLE_RETURN_IF_ERROR(check_monitor("callbacks.early_stopping.monitor", c.early_stopping_monitor));
  if (c.save_best_only) SYSTOLE_RETURN_IF_ERROR(check_monitor("checkpoint.monitor", c.checkpoint_monitor));
  if (c.save_best_only && c.checkpoint_dir.empty())
    return invalid("checkpoint.save_best_only: needs checkpoint.dir");
  if (c.resume && c.checkpoint_dir.empty()) return invalid("checkpoint.resume: needs checkpoint.dir");
  if (c.data_format == "tfrecord") {
    if (c.train_files.empty())
      return invalid("data.train: tfrecord data needs the training files' pattern(s)");
    if (c.features.empty()) return invalid("data.features: tfrecord data needs the records' schema");
    if (c.inputs.empty()) return invalid("data.inputs: name the feature(s) that feed the model");
    if (c.negatives > 0 && std::find(c.inputs.begin(), c.inputs.end(), c.negative_feature) == c.inputs.end())
      return invalid("data.negatives.feature: '" + c.negative_feature + "' is not one of data.inputs");
  }
  return ok_status();
}

Result<std::vector<uint32_t>> select_units(const std::string& devices, bool elastic, uint32_t available) {
  auto invalid = [&](const std::string& why) {
    return Status(StatusCode::kInvalidArgument, "devices: " + why + " (got '" + devices + "')");
  };
  // Counts and indices are digits only, checked before any loop uses them:
  // "-1" or "4294967297" is an error, never a wrapped value.
  constexpr uint64_t kMostUnits = 1024;
  std::vector<uint32_t> units;
  if (devices == "auto") {
    for (uint32_t u = 0; u < available; ++u) units.push_back(u);
  } else if (!devices.empty() && devices.front() == '[') {
    if (devices.back() != ']') return invalid("a list looks like [0, 2]");
    std::stringstream text(devices.substr(1, devices.size() - 2));
    std::string item;
    while (std::getline(text, item, ',')) {
      item.erase(0, item.find_first_not_of(' '));
      item.erase(item.find_last_not_of(' ') + 1);
      auto unit = config::parse_whole(item, kMostUnits - 1);
      if (!unit.ok())
        return invalid("'" + item + "' is not a unit index (0 to " + std::to_string(kMostUnits - 1) + ")");
      units.push_back(uint32_t(*unit));
    }
    std::vector<uint32_t> sorted = units;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
      return invalid("a unit is listed twice");
  } else {
    auto count = config::parse_whole(devices, kMostUnits);
    if (!count.ok() || *count == 0)
      return invalid("expected auto, a count (1 to " + std::to_string(kMostUnits) +
                     ") or a list of unit indices");
    for (uint32_t u = 0; u < *count; ++u) units.push_back(u);
  }
  if (units.empty()) return invalid("no unit selected");
  const uint32_t highest = *std::max_element(units.begin(), units.end());
  if (!elastic && highest >= available)
    return invalid("unit " + std::to_string(highest) + " does not exist (the device has " +
                   std::to_string(available) + ")");
  if (elastic && highest >= 64) return invalid("an emulated device has at most 64 units");
  return units;
}

Result<ExampleSchema> example_schema(const RunConfig& config) {
  auto schema = ExampleSchema::create(config.features);
  if (!schema.ok()) return Status(schema.status().code(), "data.features: " + schema.status().message());
  return schema;
}

Result<Compression> data_compression(const RunConfig& config) {
  auto compression = parse_compression(config.compression);
  if (!compression.ok())
    return Status(compression.status().code(), "data.compression: " + compression.status().message());
  return compression;
}

ExampleColumns example_columns(const RunConfig& config) {
  return ExampleColumns{config.inputs, config.label, config.classes};
}

std::vector<std::pair<std::string, std::string>> job_settings(const RunConfig& c) {
  std::vector<std::pair<std::string, std::string>> settings;
  for (const ConfigField& field : config_fields())
    if (field.job_wide) settings.emplace_back(field.key, config_key_text(field, c));
  return settings;
}

std::string join(const std::vector<uint32_t>& values, const char* separator) {
  std::string text;
  for (std::size_t i = 0; i < values.size(); ++i) text += (i ? separator : "") + std::to_string(values[i]);
  return text;
}

Result<TrainerConfig> trainer_settings(const RunConfig& config, const ModelSpec& model,
                                       uint64_t batches_per_epoch) {
  TrainerConfig settings;
  settings.model = model;
  settings.launch_timeout = std::chrono::milliseconds(int64_t(config.launch_timeout_s * 1000));
  OptimizerConfig& optimizer = settings.optimizer;
  optimizer.name = config.optimizer;
  optimizer.learning_rate = config.learning_rate;
  optimizer.momentum = config.momentum;
  optimizer.nesterov = config.nesterov;
  optimizer.beta1 = config.beta1;
  optimizer.beta2 = config.beta2;
  optimizer.epsilon = config.epsilon;
  optimizer.initial_accumulator = config.initial_accumulator;
  optimizer.trust_coefficient = config.trust_coefficient;
  optimizer.weight_decay = config.weight_decay;
  optimizer.clipnorm = config.clipnorm;
  optimizer.global_clipnorm = config.global_clipnorm;
  optimizer.embedding_learning_rate = config.embedding_learning_rate;
  optimizer.embedding_initial_accumulator = config.embedding_initial_accumulator;
  LearningRateSchedule& schedule = optimizer.schedule;
  auto kind = LearningRateSchedule::parse(config.schedule);
  if (!kind.ok()) return Status(kind.status().code(), "train.schedule: " + kind.status().message());
  schedule.kind = *kind;
  schedule.decay_steps = config.decay_steps;
  schedule.decay_rate = config.decay_rate;
  schedule.warmup_steps = config.warmup_steps;
  if (schedule.kind == LearningRateSchedule::Kind::kCosine && schedule.decay_steps == 0) {
    const uint64_t per_epoch = config.steps_per_epoch
                                   ? std::min<uint64_t>(config.steps_per_epoch, batches_per_epoch)
                                   : batches_per_epoch;
    const uint64_t steps = uint64_t(config.epochs) * per_epoch;
    schedule.decay_steps =
        std::max<uint64_t>(1, steps > schedule.warmup_steps ? steps - schedule.warmup_steps : 1);
  }
  settings.loss = config.loss;
  settings.metrics = config.metrics;
  settings.global_batch = config.global_batch;
  settings.seed = config.seed;
  settings.steps_per_execution = config.steps_per_execution;
  settings.placement = config.placement == "device" ? Placement::kDevice : Placement::kHost;
  return settings;
}

}  // namespace systole
