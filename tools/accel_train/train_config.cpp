// SPDX-License-Identifier: Apache-2.0
// YAML configuration of accel_train.
#include "train_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <sstream>

#include "systole/optimizer.h"

namespace systole {
namespace {

// Reads `key` of `node` into `out` when present; `field` names it in errors.
template <class T>
Status read(const YAML::Node& node, const char* key, const std::string& field, T& out) {
  const YAML::Node value = node[key];
  if (!value) return ok_status();
  try {
    out = value.as<T>();
  } catch (const YAML::Exception&) {
    return Status(StatusCode::kInvalidArgument,
                  field + ": cannot read '" + YAML::Dump(value) + "' as the expected type");
  }
  return ok_status();
}

Status known_keys(const YAML::Node& node, const std::string& section,
                  const std::set<std::string>& keys) {
  if (!node.IsMap())
    return Status(StatusCode::kInvalidArgument,
                  (section.empty() ? std::string("the file") : section) + " must be a mapping");
  for (const auto& entry : node) {
    const std::string key = entry.first.as<std::string>();
    if (!keys.count(key)) {
      std::string expected;
      for (const std::string& k : keys) expected += (expected.empty() ? "" : ", ") + k;
      return Status(StatusCode::kInvalidArgument,
                    (section.empty() ? "" : section + ".") + key + ": unknown key (expected one of " +
                        expected + ")");
    }
  }
  return ok_status();
}

// A field's value as text: a scalar as written, a list of scalars as
// "[a, b]".
Status field_text(const YAML::Node& value, const std::string& field, std::string& text) {
  if (value.IsScalar()) {
    text = value.Scalar();
    return ok_status();
  }
  if (value.IsSequence()) {
    text = "[";
    for (std::size_t i = 0; i < value.size(); ++i) {
      if (!value[i].IsScalar())
        return Status(StatusCode::kInvalidArgument, field + ": expected a value or a list of values");
      text += (i ? ", " : "") + value[i].Scalar();
    }
    text += "]";
    return ok_status();
  }
  return Status(StatusCode::kInvalidArgument, field + ": expected a value or a list of values");
}

// model.layers: a list of mappings, each with a `type`.
Status read_layers(const YAML::Node& node, std::vector<LayerConfig>& layers) {
  if (!node.IsSequence())
    return Status(StatusCode::kInvalidArgument, "model.layers: expected a list of layers");
  layers.clear();
  for (std::size_t i = 0; i < node.size(); ++i) {
    const std::string where = "model.layers[" + std::to_string(i) + "]";
    const YAML::Node entry = node[i];
    if (!entry.IsMap() || !entry["type"] || !entry["type"].IsScalar())
      return Status(StatusCode::kInvalidArgument,
                    where + ": expected a mapping with a type ({type: dense, units: 10})");
    LayerConfig layer;
    layer.type = entry["type"].Scalar();
    for (const auto& field : entry) {
      const std::string key = field.first.as<std::string>();
      if (key == "type") continue;
      std::string text;
      SYSTOLE_RETURN_IF_ERROR(field_text(field.second, where + "." + key, text));
      layer.fields.emplace_back(key, text);
    }
    layers.push_back(std::move(layer));
  }
  return ok_status();
}

// A list of file patterns: one string or a list of them.
Status read_patterns(const YAML::Node& node, const char* key, const std::string& field,
                     std::vector<std::string>& out) {
  const YAML::Node value = node[key];
  if (!value) return ok_status();
  if (value.IsScalar()) {
    out = {value.Scalar()};
    return ok_status();
  }
  return read(node, key, field, out);
}

// data.features: a mapping of feature name to {dtype, shape, default,
// hash_buckets}, TensorFlow's FixedLenFeature in YAML.
Status read_features(const YAML::Node& node, std::vector<FeatureSpec>& features) {
  if (!node.IsMap())
    return Status(StatusCode::kInvalidArgument,
                  "data.features: expected a mapping of name to {dtype, shape, default, hash_buckets}");
  features.clear();
  for (const auto& entry : node) {
    FeatureSpec spec;
    spec.name = entry.first.as<std::string>();
    const std::string where = "data.features." + spec.name;
    const YAML::Node fields = entry.second;
    SYSTOLE_RETURN_IF_ERROR(known_keys(fields, where, {"dtype", "shape", "default", "hash_buckets"}));
    std::string dtype = "float32";
    SYSTOLE_RETURN_IF_ERROR(read(fields, "dtype", where + ".dtype", dtype));
    auto type = parse_feature_type(dtype);
    if (!type.ok()) return Status(type.status().code(), where + ".dtype: " + type.status().message());
    spec.type = *type;
    SYSTOLE_RETURN_IF_ERROR(read(fields, "shape", where + ".shape", spec.shape));
    SYSTOLE_RETURN_IF_ERROR(read(fields, "hash_buckets", where + ".hash_buckets", spec.hash_buckets));
    if (const YAML::Node value = fields["default"]) {
      spec.has_default = true;
      std::vector<YAML::Node> items;  // one value, or shape-many
      if (value.IsSequence()) {
        for (std::size_t i = 0; i < value.size(); ++i) items.push_back(value[i]);
      } else {
        items.push_back(value);
      }
      try {
        for (const YAML::Node& item : items) {
          if (spec.type == FeatureType::kBytes) spec.default_bytes.push_back(item.as<std::string>());
          else spec.default_numbers.push_back(item.as<double>());
        }
      } catch (const YAML::Exception&) {
        return Status(StatusCode::kInvalidArgument,
                      where + ".default: cannot read '" + YAML::Dump(value) + "' as " + dtype + " values");
      }
    }
    features.push_back(std::move(spec));
  }
  return ok_status();
}

}  // namespace

Status load_train_config(const std::string& path, TrainConfig& c) {
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
  auto in_file = [&](Status status) {
    return status.ok() ? status : Status(status.code(), path + ": " + status.message());
  };
  if (root.IsNull()) return ok_status();  // an empty file: all defaults
  SYSTOLE_RETURN_IF_ERROR(in_file(known_keys(
      root, "", {"backend", "device", "devices", "array", "engine", "xclbin", "model", "data", "train", "checkpoint",
                "mpi", "ranking", "callbacks", "tensorboard", "trace"})));
  SYSTOLE_RETURN_IF_ERROR(in_file(read(root, "trace", "trace", c.trace_file)));
  SYSTOLE_RETURN_IF_ERROR(in_file(read(root, "backend", "backend", c.backend)));
  SYSTOLE_RETURN_IF_ERROR(in_file(read(root, "device", "device", c.device)));
  if (root["devices"] && root["devices"].IsSequence()) {
    std::vector<uint32_t> units;
    SYSTOLE_RETURN_IF_ERROR(in_file(read(root, "devices", "devices", units)));
    std::ostringstream text;
    text << "[";
    for (std::size_t i = 0; i < units.size(); ++i) text << (i ? "," : "") << units[i];
    text << "]";
    c.devices = text.str();
  } else {
    SYSTOLE_RETURN_IF_ERROR(in_file(read(root, "devices", "devices", c.devices)));
  }
  SYSTOLE_RETURN_IF_ERROR(in_file(read(root, "array", "array", c.array)));
  SYSTOLE_RETURN_IF_ERROR(in_file(read(root, "engine", "engine", c.engine)));
  SYSTOLE_RETURN_IF_ERROR(in_file(read(root, "xclbin", "xclbin", c.xclbin)));
  if (const YAML::Node model = root["model"]) {
    SYSTOLE_RETURN_IF_ERROR(in_file(known_keys(model, "model", {"hidden", "layers", "input_shape", "classes"})));
    if (model["hidden"] && model["layers"])
      return in_file(Status(StatusCode::kInvalidArgument,
                            "model: give either hidden (a dense stack) or layers, not both"));
    SYSTOLE_RETURN_IF_ERROR(in_file(read(model, "hidden", "model.hidden", c.hidden)));
    if (model["layers"]) SYSTOLE_RETURN_IF_ERROR(in_file(read_layers(model["layers"], c.layers)));
    SYSTOLE_RETURN_IF_ERROR(in_file(read(model, "input_shape", "model.input_shape", c.input_shape)));
    SYSTOLE_RETURN_IF_ERROR(in_file(read(model, "classes", "model.classes", c.classes)));
  }
  if (const YAML::Node data = root["data"]) {
    SYSTOLE_RETURN_IF_ERROR(in_file(known_keys(
        data, "data",
        {"format", "dir", "validation_examples", "train", "validation", "test", "features", "inputs", "label",
         "shuffle_buffer", "cycle_length", "threads", "prefetch", "skip_corrupt", "negatives"})));
    SYSTOLE_RETURN_IF_ERROR(in_file(read(data, "format", "data.format", c.data_format)));
    SYSTOLE_RETURN_IF_ERROR(in_file(read(data, "dir", "data.dir", c.data_dir)));
    SYSTOLE_RETURN_IF_ERROR(in_file(
        read(data, "validation_examples", "data.validation_examples", c.validation_examples)));
    SYSTOLE_RETURN_IF_ERROR(in_file(read_patterns(data, "train", "data.train", c.train_files)));
    SYSTOLE_RETURN_IF_ERROR(in_file(read_patterns(data, "validation", "data.validation", c.validation_files)));
    SYSTOLE_RETURN_IF_ERROR(in_file(read_patterns(data, "test", "data.test", c.test_files)));
    if (data["features"]) SYSTOLE_RETURN_IF_ERROR(in_file(read_features(data["features"], c.features)));
    SYSTOLE_RETURN_IF_ERROR(in_file(read_patterns(data, "inputs", "data.inputs", c.inputs)));
    SYSTOLE_RETURN_IF_ERROR(in_file(read(data, "label", "data.label", c.label)));
    SYSTOLE_RETURN_IF_ERROR(in_file(read(data, "shuffle_buffer", "data.shuffle_buffer", c.shuffle_buffer)));
    SYSTOLE_RETURN_IF_ERROR(in_file(read(data, "cycle_length", "data.cycle_length", c.cycle_length)));
    SYSTOLE_RETURN_IF_ERROR(in_file(read(data, "threads", "data.threads", c.reader_threads)));
    SYSTOLE_RETURN_IF_ERROR(in_file(read(data, "prefetch", "data.prefetch", c.prefetch)));
    SYSTOLE_RETURN_IF_ERROR(in_file(read(data, "skip_corrupt", "data.skip_corrupt", c.skip_corrupt)));
    if (const YAML::Node negatives = data["negatives"]) {
      SYSTOLE_RETURN_IF_ERROR(in_file(known_keys(negatives, "data.negatives", {"count", "feature"})));
      SYSTOLE_RETURN_IF_ERROR(in_file(read(negatives, "count", "data.negatives.count", c.negatives)));
      SYSTOLE_RETURN_IF_ERROR(in_file(read(negatives, "feature", "data.negatives.feature", c.negative_feature)));
    }
  }
  if (const YAML::Node train = root["train"]) {
    SYSTOLE_RETURN_IF_ERROR(in_file(known_keys(
        train, "train",
        {"epochs", "global_batch", "optimizer", "learning_rate", "schedule", "momentum", "seed",
         "steps_per_execution", "launch_timeout_s", "steps_per_epoch", "embedding_learning_rate",
         "embedding_initial_accumulator", "decay_steps", "decay_rate", "warmup_steps", "log_every"})));
    SYSTOLE_RETURN_IF_ERROR(in_file(read(train, "decay_steps", "train.decay_steps", c.decay_steps)));
    SYSTOLE_RETURN_IF_ERROR(in_file(read(train, "decay_rate", "train.decay_rate", c.decay_rate)));
    SYSTOLE_RETURN_IF_ERROR(in_file(read(train, "warmup_steps", "train.warmup_steps", c.warmup_steps)));
    SYSTOLE_RETURN_IF_ERROR(in_file(read(train, "log_every", "train.log_every", c.log_every)));
    SYSTOLE_RETURN_IF_ERROR(in_file(read(train, "embedding_initial_accumulator", "train.embedding_initial_accumulator",
                                         c.embedding_initial_accumulator)));
    SYSTOLE_RETURN_IF_ERROR(in_file(read(train, "embedding_learning_rate", "train.embedding_learning_rate",
                                         c.embedding_learning_rate)));
    SYSTOLE_RETURN_IF_ERROR(in_file(read(train, "steps_per_epoch", "train.steps_per_epoch", c.steps_per_epoch)));
    SYSTOLE_RETURN_IF_ERROR(in_file(read(train, "launch_timeout_s", "train.launch_timeout_s", c.launch_timeout_s)));
    SYSTOLE_RETURN_IF_ERROR(in_file(read(train, "epochs", "train.epochs", c.epochs)));
    SYSTOLE_RETURN_IF_ERROR(in_file(read(train, "global_batch", "train.global_batch", c.global_batch)));
    SYSTOLE_RETURN_IF_ERROR(in_file(read(train, "optimizer", "train.optimizer", c.optimizer)));
    SYSTOLE_RETURN_IF_ERROR(in_file(read(train, "learning_rate", "train.learning_rate", c.learning_rate)));
    SYSTOLE_RETURN_IF_ERROR(in_file(read(train, "schedule", "train.schedule", c.schedule)));
    SYSTOLE_RETURN_IF_ERROR(in_file(read(train, "momentum", "train.momentum", c.momentum)));
    SYSTOLE_RETURN_IF_ERROR(in_file(read(train, "seed", "train.seed", c.seed)));
    SYSTOLE_RETURN_IF_ERROR(in_file(
        read(train, "steps_per_execution", "train.steps_per_execution", c.steps_per_execution)));
  }
  if (const YAML::Node checkpoint = root["checkpoint"]) {
    SYSTOLE_RETURN_IF_ERROR(
        in_file(known_keys(checkpoint, "checkpoint", {"dir", "resume", "save_best_only", "monitor"})));
    SYSTOLE_RETURN_IF_ERROR(in_file(read(checkpoint, "dir", "checkpoint.dir", c.checkpoint_dir)));
    SYSTOLE_RETURN_IF_ERROR(in_file(read(checkpoint, "resume", "checkpoint.resume", c.resume)));
    SYSTOLE_RETURN_IF_ERROR(
        in_file(read(checkpoint, "save_best_only", "checkpoint.save_best_only", c.save_best_only)));
    SYSTOLE_RETURN_IF_ERROR(in_file(read(checkpoint, "monitor", "checkpoint.monitor", c.checkpoint_monitor)));
  }
  if (const YAML::Node callbacks = root["callbacks"]) {
    SYSTOLE_RETURN_IF_ERROR(
        in_file(known_keys(callbacks, "callbacks", {"early_stopping", "terminate_on_nan", "csv_logger"})));
    if (const YAML::Node early = callbacks["early_stopping"]) {
      SYSTOLE_RETURN_IF_ERROR(in_file(known_keys(early, "callbacks.early_stopping",
                                                 {"monitor", "patience", "min_delta", "restore_best_weights"})));
      c.early_stopping = true;
      SYSTOLE_RETURN_IF_ERROR(
          in_file(read(early, "monitor", "callbacks.early_stopping.monitor", c.early_stopping_monitor)));
      SYSTOLE_RETURN_IF_ERROR(
          in_file(read(early, "patience", "callbacks.early_stopping.patience", c.early_stopping_patience)));
      SYSTOLE_RETURN_IF_ERROR(
          in_file(read(early, "min_delta", "callbacks.early_stopping.min_delta", c.early_stopping_min_delta)));
      SYSTOLE_RETURN_IF_ERROR(in_file(read(early, "restore_best_weights",
                                           "callbacks.early_stopping.restore_best_weights",
                                           c.early_stopping_restore_best)));
    }
    SYSTOLE_RETURN_IF_ERROR(
        in_file(read(callbacks, "terminate_on_nan", "callbacks.terminate_on_nan", c.terminate_on_nan)));
    if (const YAML::Node csv = callbacks["csv_logger"]) {
      SYSTOLE_RETURN_IF_ERROR(in_file(known_keys(csv, "callbacks.csv_logger", {"filename", "append"})));
      SYSTOLE_RETURN_IF_ERROR(in_file(read(csv, "filename", "callbacks.csv_logger.filename", c.csv_log)));
      SYSTOLE_RETURN_IF_ERROR(in_file(read(csv, "append", "callbacks.csv_logger.append", c.csv_append)));
    }
  }
  if (const YAML::Node tensorboard = root["tensorboard"]) {
    SYSTOLE_RETURN_IF_ERROR(in_file(known_keys(tensorboard, "tensorboard", {"dir", "update_freq"})));
    SYSTOLE_RETURN_IF_ERROR(in_file(read(tensorboard, "dir", "tensorboard.dir", c.tensorboard_dir)));
    SYSTOLE_RETURN_IF_ERROR(
        in_file(read(tensorboard, "update_freq", "tensorboard.update_freq", c.tensorboard_update_freq)));
  }
  if (const YAML::Node ranking = root["ranking"]) {
    SYSTOLE_RETURN_IF_ERROR(in_file(known_keys(ranking, "ranking", {"k", "users"})));
    c.ranking = true;
    SYSTOLE_RETURN_IF_ERROR(in_file(read(ranking, "k", "ranking.k", c.ranking_k)));
    SYSTOLE_RETURN_IF_ERROR(in_file(read(ranking, "users", "ranking.users", c.ranking_users)));
  }
  if (const YAML::Node mpi = root["mpi"]) {
    SYSTOLE_RETURN_IF_ERROR(in_file(known_keys(mpi, "mpi", {"timeout_s"})));
    SYSTOLE_RETURN_IF_ERROR(in_file(read(mpi, "timeout_s", "mpi.timeout_s", c.mpi_timeout_s)));
  }
  return ok_status();
}

Status validate_train_config(const TrainConfig& c) {
  auto invalid = [](const std::string& message) {
    return Status(StatusCode::kInvalidArgument, message);
  };
  if (c.engine != "fast" && c.engine != "hls")
    return invalid("engine: expected fast or hls, got '" + c.engine + "'");
  if (c.layers.empty() && (c.hidden.empty() || std::count(c.hidden.begin(), c.hidden.end(), 0u)))
    return invalid("model.hidden: expected a list of positive layer widths");
  if (!(c.launch_timeout_s > 0) || c.launch_timeout_s > 7 * 86400)
    return invalid("train.launch_timeout_s: must be > 0 seconds (and at most a week)");
  if (c.epochs == 0) return invalid("train.epochs: must be >= 1");
  if (c.global_batch == 0) return invalid("train.global_batch: must be >= 1");
  if (c.steps_per_execution == 0) return invalid("train.steps_per_execution: must be >= 1");
  if (!(c.mpi_timeout_s > 0)) return invalid("mpi.timeout_s: must be > 0 seconds");
  if (c.optimizer != "adam" && c.optimizer != "sgd")
    return invalid("train.optimizer: expected adam or sgd, got '" + c.optimizer + "'");
  if (!(c.learning_rate > 0) || !std::isfinite(c.learning_rate))
    return invalid("train.learning_rate: must be a positive number");
  if (!(c.embedding_learning_rate > 0) || !std::isfinite(c.embedding_learning_rate))
    return invalid("train.embedding_learning_rate: must be a positive number");
  if (!(c.embedding_initial_accumulator > 0) || !std::isfinite(c.embedding_initial_accumulator))
    return invalid("train.embedding_initial_accumulator: must be a positive number");
  if (c.ranking && (c.ranking_k == 0 || c.ranking_users == 0))
    return invalid("ranking.k and ranking.users must be >= 1");
  if (c.ranking && (c.data_format != "tfrecord" || c.test_files.empty() || c.inputs.size() != 2))
    return invalid("ranking: needs data.format tfrecord, data.test and data.inputs [user, item]");
  if (auto kind = LearningRateSchedule::parse(c.schedule); !kind.ok())
    return invalid("train.schedule: " + kind.status().message());
  if ((c.schedule == "exponential" || c.schedule == "step") && c.decay_steps == 0)
    return invalid("train.decay_steps: the " + c.schedule + " schedule needs decay_steps >= 1");
  if (!(c.decay_rate > 0 && c.decay_rate <= 1)) return invalid("train.decay_rate: must be in (0, 1]");
  for (const auto& [field, monitor] : {std::pair<const char*, const std::string*>{"checkpoint.monitor",
                                                                                  &c.checkpoint_monitor},
                                       {"callbacks.early_stopping.monitor", &c.early_stopping_monitor}})
    if (*monitor != "loss" && *monitor != "accuracy" && *monitor != "val_loss" && *monitor != "val_accuracy")
      return invalid(std::string(field) + ": expected loss, accuracy, val_loss or val_accuracy, got '" + *monitor +
                     "'");
  if (c.save_best_only && c.checkpoint_dir.empty()) return invalid("checkpoint.save_best_only: needs checkpoint.dir");
  if (!(c.early_stopping_min_delta >= 0) || !std::isfinite(c.early_stopping_min_delta))
    return invalid("callbacks.early_stopping.min_delta: must be a number >= 0");
  if (!(c.momentum >= 0 && c.momentum < 1)) return invalid("train.momentum: must be in [0, 1)");
  if (c.data_format != "idx" && c.data_format != "tfrecord")
    return invalid("data.format: expected idx or tfrecord, got '" + c.data_format + "'");
  if (c.data_format == "tfrecord") {
    if (c.train_files.empty()) return invalid("data.train: tfrecord data needs the training files' pattern(s)");
    if (c.features.empty()) return invalid("data.features: tfrecord data needs the records' schema");
    if (c.inputs.empty()) return invalid("data.inputs: name the feature(s) that feed the model");
    if (c.cycle_length == 0 || c.cycle_length > 1024) return invalid("data.cycle_length: must be in [1, 1024]");
    if (c.reader_threads == 0 || c.reader_threads > 256) return invalid("data.threads: must be in [1, 256]");
    if (c.prefetch == 0 || c.prefetch > 1024) return invalid("data.prefetch: must be in [1, 1024]");
    if (c.shuffle_buffer > (1u << 24)) return invalid("data.shuffle_buffer: at most 2^24 records");
    if (c.negatives > 1000) return invalid("data.negatives.count: at most 1000 per positive");
    if (c.negatives > 0 && std::find(c.inputs.begin(), c.inputs.end(), c.negative_feature) == c.inputs.end())
      return invalid("data.negatives.feature: '" + c.negative_feature + "' is not one of data.inputs");
  }
  if (c.resume && c.checkpoint_dir.empty())
    return invalid("checkpoint.resume: needs checkpoint.dir");
  return ok_status();
}

Result<std::vector<uint32_t>> select_units(const std::string& devices, bool elastic,
                                           uint32_t available) {
  auto invalid = [&](const std::string& why) {
    return Status(StatusCode::kInvalidArgument, "devices: " + why + " (got '" + devices + "')");
  };
  std::vector<uint32_t> units;
  if (devices == "auto") {
    for (uint32_t u = 0; u < available; ++u) units.push_back(u);
  } else if (!devices.empty() && devices.front() == '[') {
    if (devices.back() != ']') return invalid("a list looks like [0, 2]");
    std::stringstream text(devices.substr(1, devices.size() - 2));
    std::string item;
    while (std::getline(text, item, ',')) {
      try {
        std::size_t used = 0;
        const unsigned long unit = std::stoul(item, &used);
        if (item.find_first_not_of(" ", used) != std::string::npos) throw std::invalid_argument(item);
        units.push_back(uint32_t(unit));
      } catch (const std::exception&) {
        return invalid("'" + item + "' is not a unit index");
      }
    }
    std::vector<uint32_t> sorted = units;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
      return invalid("a unit is listed twice");
  } else {
    try {
      std::size_t used = 0;
      const unsigned long count = std::stoul(devices, &used);
      if (used != devices.size() || count == 0) throw std::invalid_argument(devices);
      for (uint32_t u = 0; u < count; ++u) units.push_back(u);
    } catch (const std::exception&) {
      return invalid("expected auto, a count or a list of unit indices");
    }
  }
  if (units.empty()) return invalid("no unit selected");
  const uint32_t highest = *std::max_element(units.begin(), units.end());
  if (!elastic && highest >= available)
    return invalid("unit " + std::to_string(highest) + " does not exist (the device has " +
                   std::to_string(available) + ")");
  if (elastic && highest >= 64) return invalid("sw_emu emulates at most 64 units");
  return units;
}

Result<ExampleSchema> example_schema(const TrainConfig& config) {
  auto schema = ExampleSchema::create(config.features);
  if (!schema.ok()) return Status(schema.status().code(), "data.features: " + schema.status().message());
  return schema;
}

ExampleColumns example_columns(const TrainConfig& config) {
  return ExampleColumns{config.inputs, config.label, config.classes};
}

}  // namespace systole
