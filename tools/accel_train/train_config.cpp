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

Status known_keys(const YAML::Node& node, const std::string& section, const std::set<std::string>& keys) {
  if (!node.IsMap())
    return Status(StatusCode::kInvalidArgument,
                  (section.empty() ? std::string("the file") : section) + " must be a mapping");
  for (const auto& entry : node) {
    if (!entry.first.IsScalar())
      return Status(StatusCode::kInvalidArgument,
                    (section.empty() ? std::string("the file") : section) + ": a key at line " +
                        std::to_string(entry.first.Mark().line + 1) + " is not a plain name");
    const std::string key = entry.first.as<std::string>();
    if (!keys.count(key)) {
      std::string expected;
      for (const std::string& k : keys) expected += (expected.empty() ? "" : ", ") + k;
      return Status(StatusCode::kInvalidArgument, (section.empty() ? "" : section + ".") + key +
                                                      ": unknown key (expected one of " + expected + ")");
    }
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

// One mapping of the file under its dotted name ("train",
// "callbacks.early_stopping"; "" at the top): its keys checked against the
// known ones, its fields read under their full names ("train.epochs"), the
// names errors give.
class Section {
 public:
  Section(const YAML::Node& node, std::string name) : node_(node), name_(std::move(name)) {}
  Status known(const std::set<std::string>& keys) const { return known_keys(node_, name_, keys); }
  template <class T>
  Status read(const char* key, T& out) const {
    return systole::read(node_, key, field(key), out);
  }
  // One file pattern or a list of them.
  Status patterns(const char* key, std::vector<std::string>& out) const {
    return read_patterns(node_, key, field(key), out);
  }

 private:
  std::string field(const char* key) const { return name_.empty() ? std::string(key) : name_ + "." + key; }
  YAML::Node node_;
  std::string name_;
};

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
    const Section feature(fields, where);
    SYSTOLE_RETURN_IF_ERROR(feature.known({"dtype", "shape", "default", "hash_buckets"}));
    std::string dtype = "float32";
    SYSTOLE_RETURN_IF_ERROR(feature.read("dtype", dtype));
    auto type = parse_feature_type(dtype);
    if (!type.ok()) return Status(type.status().code(), where + ".dtype: " + type.status().message());
    spec.type = *type;
    SYSTOLE_RETURN_IF_ERROR(feature.read("shape", spec.shape));
    SYSTOLE_RETURN_IF_ERROR(feature.read("hash_buckets", spec.hash_buckets));
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
          if (spec.type == FeatureType::kBytes)
            spec.default_bytes.push_back(item.as<std::string>());
          else
            spec.default_numbers.push_back(item.as<double>());
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

// The config's fields from a parsed file.
Status read_config(const YAML::Node& root, TrainConfig& c) {
  const Section top(root, "");
  SYSTOLE_RETURN_IF_ERROR(
      top.known({"backend", "device", "devices", "array", "engine", "xclbin", "perf", "model", "data",
                 "train", "checkpoint", "mpi", "ranking", "callbacks", "tensorboard", "trace"}));
  SYSTOLE_RETURN_IF_ERROR(top.read("trace", c.trace_file));
  SYSTOLE_RETURN_IF_ERROR(top.read("backend", c.backend));
  SYSTOLE_RETURN_IF_ERROR(top.read("device", c.device));
  if (root["devices"] && root["devices"].IsSequence()) {
    std::vector<uint32_t> units;
    SYSTOLE_RETURN_IF_ERROR(top.read("devices", units));
    std::ostringstream text;
    text << "[";
    for (std::size_t i = 0; i < units.size(); ++i) text << (i ? "," : "") << units[i];
    text << "]";
    c.devices = text.str();
  } else {
    SYSTOLE_RETURN_IF_ERROR(top.read("devices", c.devices));
  }
  SYSTOLE_RETURN_IF_ERROR(top.read("array", c.array));
  SYSTOLE_RETURN_IF_ERROR(top.read("engine", c.engine));
  SYSTOLE_RETURN_IF_ERROR(top.read("xclbin", c.xclbin));
  if (const YAML::Node node = root["perf"]) {
    const Section perf(node, "perf");
    SYSTOLE_RETURN_IF_ERROR(perf.known({"board", "clock_mhz", "pcie_gen", "pcie_lanes"}));
    SYSTOLE_RETURN_IF_ERROR(perf.read("board", c.board));
    SYSTOLE_RETURN_IF_ERROR(perf.read("clock_mhz", c.clock_mhz));
    SYSTOLE_RETURN_IF_ERROR(perf.read("pcie_gen", c.pcie_gen));
    SYSTOLE_RETURN_IF_ERROR(perf.read("pcie_lanes", c.pcie_lanes));
  }
  if (const YAML::Node node = root["model"]) {
    const Section model(node, "model");
    SYSTOLE_RETURN_IF_ERROR(model.known({"hidden", "layers", "input_shape", "classes"}));
    if (node["hidden"] && node["layers"])
      return Status(StatusCode::kInvalidArgument,
                    "model: give either hidden (a dense stack) or layers, not both");
    SYSTOLE_RETURN_IF_ERROR(model.read("hidden", c.hidden));
    if (node["layers"]) SYSTOLE_RETURN_IF_ERROR(read_layers(node["layers"], c.layers));
    SYSTOLE_RETURN_IF_ERROR(model.read("input_shape", c.input_shape));
    SYSTOLE_RETURN_IF_ERROR(model.read("classes", c.classes));
  }
  if (const YAML::Node node = root["data"]) {
    const Section data(node, "data");
    SYSTOLE_RETURN_IF_ERROR(data.known({"format", "dir", "validation_examples", "train", "validation", "test",
                                        "features", "inputs", "label", "shuffle_buffer", "cycle_length",
                                        "threads", "prefetch", "skip_corrupt", "negatives"}));
    SYSTOLE_RETURN_IF_ERROR(data.read("format", c.data_format));
    SYSTOLE_RETURN_IF_ERROR(data.read("dir", c.data_dir));
    SYSTOLE_RETURN_IF_ERROR(data.read("validation_examples", c.validation_examples));
    SYSTOLE_RETURN_IF_ERROR(data.patterns("train", c.train_files));
    SYSTOLE_RETURN_IF_ERROR(data.patterns("validation", c.validation_files));
    SYSTOLE_RETURN_IF_ERROR(data.patterns("test", c.test_files));
    if (node["features"]) SYSTOLE_RETURN_IF_ERROR(read_features(node["features"], c.features));
    SYSTOLE_RETURN_IF_ERROR(data.patterns("inputs", c.inputs));
    SYSTOLE_RETURN_IF_ERROR(data.read("label", c.label));
    SYSTOLE_RETURN_IF_ERROR(data.read("shuffle_buffer", c.shuffle_buffer));
    SYSTOLE_RETURN_IF_ERROR(data.read("cycle_length", c.cycle_length));
    SYSTOLE_RETURN_IF_ERROR(data.read("threads", c.reader_threads));
    SYSTOLE_RETURN_IF_ERROR(data.read("prefetch", c.prefetch));
    SYSTOLE_RETURN_IF_ERROR(data.read("skip_corrupt", c.skip_corrupt));
    if (const YAML::Node sampled = node["negatives"]) {
      const Section negatives(sampled, "data.negatives");
      SYSTOLE_RETURN_IF_ERROR(negatives.known({"count", "feature"}));
      SYSTOLE_RETURN_IF_ERROR(negatives.read("count", c.negatives));
      SYSTOLE_RETURN_IF_ERROR(negatives.read("feature", c.negative_feature));
    }
  }
  if (const YAML::Node node = root["train"]) {
    const Section train(node, "train");
    SYSTOLE_RETURN_IF_ERROR(train.known(
        {"epochs", "global_batch", "optimizer", "learning_rate", "schedule", "momentum", "seed",
         "steps_per_execution", "launch_timeout_s", "steps_per_epoch", "embedding_learning_rate",
         "embedding_initial_accumulator", "decay_steps", "decay_rate", "warmup_steps", "log_every"}));
    SYSTOLE_RETURN_IF_ERROR(train.read("decay_steps", c.decay_steps));
    SYSTOLE_RETURN_IF_ERROR(train.read("decay_rate", c.decay_rate));
    SYSTOLE_RETURN_IF_ERROR(train.read("warmup_steps", c.warmup_steps));
    SYSTOLE_RETURN_IF_ERROR(train.read("log_every", c.log_every));
    SYSTOLE_RETURN_IF_ERROR(train.read("embedding_initial_accumulator", c.embedding_initial_accumulator));
    SYSTOLE_RETURN_IF_ERROR(train.read("embedding_learning_rate", c.embedding_learning_rate));
    SYSTOLE_RETURN_IF_ERROR(train.read("steps_per_epoch", c.steps_per_epoch));
    SYSTOLE_RETURN_IF_ERROR(train.read("launch_timeout_s", c.launch_timeout_s));
    SYSTOLE_RETURN_IF_ERROR(train.read("epochs", c.epochs));
    SYSTOLE_RETURN_IF_ERROR(train.read("global_batch", c.global_batch));
    SYSTOLE_RETURN_IF_ERROR(train.read("optimizer", c.optimizer));
    SYSTOLE_RETURN_IF_ERROR(train.read("learning_rate", c.learning_rate));
    SYSTOLE_RETURN_IF_ERROR(train.read("schedule", c.schedule));
    SYSTOLE_RETURN_IF_ERROR(train.read("momentum", c.momentum));
    SYSTOLE_RETURN_IF_ERROR(train.read("seed", c.seed));
    SYSTOLE_RETURN_IF_ERROR(train.read("steps_per_execution", c.steps_per_execution));
  }
  if (const YAML::Node node = root["checkpoint"]) {
    const Section checkpoint(node, "checkpoint");
    SYSTOLE_RETURN_IF_ERROR(checkpoint.known({"dir", "resume", "save_best_only", "monitor"}));
    SYSTOLE_RETURN_IF_ERROR(checkpoint.read("dir", c.checkpoint_dir));
    SYSTOLE_RETURN_IF_ERROR(checkpoint.read("resume", c.resume));
    SYSTOLE_RETURN_IF_ERROR(checkpoint.read("save_best_only", c.save_best_only));
    SYSTOLE_RETURN_IF_ERROR(checkpoint.read("monitor", c.checkpoint_monitor));
  }
  if (const YAML::Node node = root["callbacks"]) {
    const Section callbacks(node, "callbacks");
    SYSTOLE_RETURN_IF_ERROR(callbacks.known({"early_stopping", "terminate_on_nan", "csv_logger"}));
    if (const YAML::Node stopping = node["early_stopping"]) {
      const Section early(stopping, "callbacks.early_stopping");
      SYSTOLE_RETURN_IF_ERROR(early.known({"monitor", "patience", "min_delta", "restore_best_weights"}));
      c.early_stopping = true;
      SYSTOLE_RETURN_IF_ERROR(early.read("monitor", c.early_stopping_monitor));
      SYSTOLE_RETURN_IF_ERROR(early.read("patience", c.early_stopping_patience));
      SYSTOLE_RETURN_IF_ERROR(early.read("min_delta", c.early_stopping_min_delta));
      SYSTOLE_RETURN_IF_ERROR(early.read("restore_best_weights", c.early_stopping_restore_best));
    }
    SYSTOLE_RETURN_IF_ERROR(callbacks.read("terminate_on_nan", c.terminate_on_nan));
    if (const YAML::Node logger = node["csv_logger"]) {
      const Section csv(logger, "callbacks.csv_logger");
      SYSTOLE_RETURN_IF_ERROR(csv.known({"filename", "append"}));
      SYSTOLE_RETURN_IF_ERROR(csv.read("filename", c.csv_log));
      SYSTOLE_RETURN_IF_ERROR(csv.read("append", c.csv_append));
    }
  }
  if (const YAML::Node node = root["tensorboard"]) {
    const Section tensorboard(node, "tensorboard");
    SYSTOLE_RETURN_IF_ERROR(tensorboard.known({"dir", "update_freq"}));
    SYSTOLE_RETURN_IF_ERROR(tensorboard.read("dir", c.tensorboard_dir));
    SYSTOLE_RETURN_IF_ERROR(tensorboard.read("update_freq", c.tensorboard_update_freq));
  }
  if (const YAML::Node node = root["ranking"]) {
    const Section ranking(node, "ranking");
    SYSTOLE_RETURN_IF_ERROR(ranking.known({"k", "users"}));
    c.ranking = true;
    SYSTOLE_RETURN_IF_ERROR(ranking.read("k", c.ranking_k));
    SYSTOLE_RETURN_IF_ERROR(ranking.read("users", c.ranking_users));
  }
  if (const YAML::Node node = root["mpi"]) {
    const Section mpi(node, "mpi");
    SYSTOLE_RETURN_IF_ERROR(mpi.known({"timeout_s"}));
    SYSTOLE_RETURN_IF_ERROR(mpi.read("timeout_s", c.mpi_timeout_s));
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
  if (root.IsNull()) return ok_status();  // an empty file: all defaults
  Status status;
  try {
    status = read_config(root, c);
  } catch (const YAML::Exception& e) {  // a conversion no check foresaw
    status = Status(StatusCode::kInvalidArgument, e.what());
  }
  return status.ok() ? status : Status(status.code(), path + ": " + status.message());
}

Status validate_train_config(const TrainConfig& c) {
  auto invalid = [](const std::string& message) { return Status(StatusCode::kInvalidArgument, message); };
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
  if (const std::vector<std::string> known = optimizer_names();
      std::find(known.begin(), known.end(), c.optimizer) == known.end()) {
    std::string names;
    for (const std::string& name : known) names += (names.empty() ? "" : ", ") + name;
    return invalid("train.optimizer: expected one of " + names + ", got '" + c.optimizer + "'");
  }
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
  auto check_monitor = [&](const char* field, const std::string& monitor) {
    const bool known =
        monitor == "loss" || monitor == "accuracy" || monitor == "val_loss" || monitor == "val_accuracy";
    return known ? ok_status()
                 : invalid(std::string(field) + ": expected loss, accuracy, val_loss or val_accuracy, got '" +
                           monitor + "'");
  };
  SYSTOLE_RETURN_IF_ERROR(check_monitor("checkpoint.monitor", c.checkpoint_monitor));
  SYSTOLE_RETURN_IF_ERROR(check_monitor("callbacks.early_stopping.monitor", c.early_stopping_monitor));
  if (c.save_best_only && c.checkpoint_dir.empty())
    return invalid("checkpoint.save_best_only: needs checkpoint.dir");
  if (!(c.early_stopping_min_delta >= 0) || !std::isfinite(c.early_stopping_min_delta))
    return invalid("callbacks.early_stopping.min_delta: must be a number >= 0");
  if (!(c.momentum >= 0 && c.momentum < 1)) return invalid("train.momentum: must be in [0, 1)");
  if (c.data_format != "idx" && c.data_format != "tfrecord")
    return invalid("data.format: expected idx or tfrecord, got '" + c.data_format + "'");
  if (c.data_format == "tfrecord") {
    if (c.train_files.empty())
      return invalid("data.train: tfrecord data needs the training files' pattern(s)");
    if (c.features.empty()) return invalid("data.features: tfrecord data needs the records' schema");
    if (c.inputs.empty()) return invalid("data.inputs: name the feature(s) that feed the model");
    if (c.cycle_length == 0 || c.cycle_length > 1024)
      return invalid("data.cycle_length: must be in [1, 1024]");
    if (c.reader_threads == 0 || c.reader_threads > 256) return invalid("data.threads: must be in [1, 256]");
    if (c.prefetch == 0 || c.prefetch > 1024) return invalid("data.prefetch: must be in [1, 1024]");
    if (c.shuffle_buffer > (1u << 24)) return invalid("data.shuffle_buffer: at most 2^24 records");
    if (c.negatives > 1000) return invalid("data.negatives.count: at most 1000 per positive");
    if (c.negatives > 0 && std::find(c.inputs.begin(), c.inputs.end(), c.negative_feature) == c.inputs.end())
      return invalid("data.negatives.feature: '" + c.negative_feature + "' is not one of data.inputs");
  }
  if (c.resume && c.checkpoint_dir.empty()) return invalid("checkpoint.resume: needs checkpoint.dir");
  return ok_status();
}

Result<std::vector<uint32_t>> select_units(const std::string& devices, bool elastic, uint32_t available) {
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
  if (elastic && highest >= 64) return invalid("an emulated device has at most 64 units");
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

std::vector<std::pair<std::string, std::string>> job_settings(const TrainConfig& c) {
  auto text = [](const auto& value) {
    std::ostringstream out;
    out.precision(17);
    out << value;
    return out.str();
  };
  auto list = [&](const auto& values) {
    std::string joined = "[";
    for (const auto& value : values) joined += (joined.size() > 1 ? ", " : "") + text(value);
    return joined + "]";
  };
  std::string layers;
  for (const LayerConfig& layer : c.layers) {
    layers += "{" + layer.type;
    for (const auto& [key, value] : layer.fields) layers += ", " + key + ": " + value;
    layers += "}";
  }
  std::string features;
  for (const FeatureSpec& f : c.features)
    features += "{" + f.name + " " + text(int(f.type)) + " " + list(f.shape) + " " + list(f.default_numbers) +
                " " + list(f.default_bytes) + " " + text(f.has_default) + " " + text(f.hash_buckets) + "}";
  return {{"backend", c.backend},
          {"array", c.array},
          {"engine", c.engine},
          {"perf.board", c.board},
          {"perf.clock_mhz", text(c.clock_mhz)},
          {"perf.pcie_gen", text(c.pcie_gen)},
          {"perf.pcie_lanes", text(c.pcie_lanes)},
          {"model.layers", layers},
          {"model.hidden", list(c.hidden)},
          {"model.input_shape", list(c.input_shape)},
          {"model.classes", text(c.classes)},
          {"data.format", c.data_format},
          {"data.dir", c.data_dir},
          {"data.validation_examples", text(c.validation_examples)},
          {"data.train", list(c.train_files)},
          {"data.validation", list(c.validation_files)},
          {"data.test", list(c.test_files)},
          {"data.features", features},
          {"data.inputs", list(c.inputs)},
          {"data.label", c.label},
          {"data.shuffle_buffer", text(c.shuffle_buffer)},
          {"data.cycle_length", text(c.cycle_length)},
          {"data.skip_corrupt", text(c.skip_corrupt)},
          {"data.negatives.count", text(c.negatives)},
          {"data.negatives.feature", c.negative_feature},
          {"train.epochs", text(c.epochs)},
          {"train.steps_per_epoch", text(c.steps_per_epoch)},
          {"train.global_batch", text(c.global_batch)},
          {"train.optimizer", c.optimizer},
          {"train.learning_rate", text(c.learning_rate)},
          {"train.schedule", c.schedule},
          {"train.decay_steps", text(c.decay_steps)},
          {"train.decay_rate", text(c.decay_rate)},
          {"train.warmup_steps", text(c.warmup_steps)},
          {"train.momentum", text(c.momentum)},
          {"train.embedding_learning_rate", text(c.embedding_learning_rate)},
          {"train.embedding_initial_accumulator", text(c.embedding_initial_accumulator)},
          {"train.seed", text(c.seed)},
          {"train.steps_per_execution", text(c.steps_per_execution)},
          {"train.launch_timeout_s", text(c.launch_timeout_s)},
          {"ranking", text(c.ranking) + " " + text(c.ranking_k) + " " + text(c.ranking_users)},
          {"checkpoint.dir", c.checkpoint_dir},
          {"checkpoint.resume", text(c.resume)},
          {"checkpoint.save_best_only", text(c.save_best_only) + " " + c.checkpoint_monitor},
          {"callbacks.early_stopping",
           text(c.early_stopping) + " " + c.early_stopping_monitor + " " + text(c.early_stopping_patience) +
               " " + text(c.early_stopping_min_delta) + " " + text(c.early_stopping_restore_best)},
          {"callbacks.terminate_on_nan", text(c.terminate_on_nan)},
          {"mpi.timeout_s", text(c.mpi_timeout_s)}};
}

std::string join(const std::vector<uint32_t>& values, const char* separator) {
  std::string text;
  for (std::size_t i = 0; i < values.size(); ++i) text += (i ? separator : "") + std::to_string(values[i]);
  return text;
}

Result<TrainerConfig> trainer_settings(const TrainConfig& config, const ModelSpec& model,
                                       uint64_t batches_per_epoch) {
  TrainerConfig settings;
  settings.model = model;
  settings.launch_timeout = std::chrono::milliseconds(int64_t(config.launch_timeout_s * 1000));
  OptimizerConfig& optimizer = settings.optimizer;
  optimizer.name = config.optimizer;
  optimizer.learning_rate = config.learning_rate;
  optimizer.momentum = config.momentum;
  optimizer.table_learning_rate = config.embedding_learning_rate;
  optimizer.table_initial_accumulator = config.embedding_initial_accumulator;
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
  settings.global_batch = config.global_batch;
  settings.seed = config.seed;
  settings.steps_per_execution = config.steps_per_execution;
  return settings;
}

}  // namespace systole
