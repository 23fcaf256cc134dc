// SPDX-License-Identifier: Apache-2.0
// The table of accel_train's configuration keys: every key once, with its
// type, range, help, flag and whether the processes of a job must agree.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>

#include "config_schema.h"
#include "config_value.h"
#include "systole/boards.h"
#include "systole/driver.h"
#include "systole/loss.h"
#include "systole/optimizer.h"

namespace systole {
namespace {

using config::invalid;
using config::joined;
using config::number_text;
using config::parse_number;
using config::Value;
using config::written;

// A field stored in one member of RunConfig.
template <class T>
ConfigField field(const char* key, T RunConfig::*member, const char* help) {
  ConfigField f;
  f.key = key;
  f.help = help;
  f.type = Value<T>::kType;
  f.read = [member](const YAML::Node& node, RunConfig& config) -> Status {
    auto value = Value<T>::read(node);
    if (!value.ok()) return value.status();
    config.*member = std::move(value).value();
    return ok_status();
  };
  f.write = [member](const RunConfig& config) { return Value<T>::write(config.*member); };
  return f;
}

// A number field with bounds: the check and the description of the
// allowed values come from the same bounds.
struct Bounds {
  std::optional<double> low, high;
  bool low_open = false, high_open = false;
};

std::string describe(const Bounds& b, bool whole) {
  auto text = [](double value) { return number_text(value, false); };
  if (b.low && b.high)
    return std::string(b.low_open ? "(" : "[") + text(*b.low) + ", " + text(*b.high) +
           (b.high_open ? ")" : "]");
  if (b.low && *b.low == 0 && b.low_open && !whole) return "a positive number";
  if (b.low)
    return (whole ? std::string(">= ") : std::string(b.low_open ? "> " : ">= ")) +
           text(b.low_open && whole ? *b.low + 1 : *b.low);
  if (b.high) return std::string(b.high_open ? "< " : "<= ") + text(*b.high);
  return "";
}

template <class T>
ConfigField number(const char* key, T RunConfig::*member, Bounds bounds, const char* help) {
  ConfigField f = field(key, member, help);
  const bool whole = std::is_integral<T>::value;
  f.values = describe(bounds, whole);
  f.check = [member, bounds, whole](const RunConfig& config) -> Status {
    const double value = double(config.*member);
    const std::string got = ", got " + number_text(value, std::is_same<T, float>::value);
    if (!std::isfinite(value)) return invalid("must be a finite number" + got);
    const bool low_ok = !bounds.low || (bounds.low_open ? value > *bounds.low : value >= *bounds.low);
    const bool high_ok = !bounds.high || (bounds.high_open ? value < *bounds.high : value <= *bounds.high);
    if (low_ok && high_ok) return ok_status();
    return invalid(std::string("must be ") + (bounds.low && bounds.high ? "in " : "") +
                   describe(bounds, whole) + got);
  };
  return f;
}

Bounds at_least(double low) { return {low, std::nullopt, false, false}; }
Bounds positive() { return {0.0, std::nullopt, true, false}; }
Bounds closed(double low, double high) { return {low, high, false, false}; }
Bounds open_closed(double low, double high) { return {low, high, true, false}; }
Bounds closed_open(double low, double high) { return {low, high, false, true}; }

// A text field whose value is one of a list (which may come from a
// registry).
ConfigField choice(const char* key, std::string RunConfig::*member,
                   std::function<std::vector<std::string>()> names, const char* help) {
  ConfigField f = field(key, member, help);
  f.values = joined(names());
  f.check = [member, names](const RunConfig& config) -> Status {
    const std::vector<std::string> known = names();
    if (std::find(known.begin(), known.end(), config.*member) != known.end()) return ok_status();
    return invalid("expected one of " + joined(known) + ", got '" + config.*member + "'");
  };
  return f;
}

std::function<std::vector<std::string>()> fixed(std::vector<std::string> names) {
  return [names] { return names; };
}

std::vector<std::string> backend_names() {
  std::vector<std::string> names;
  for (const BackendCapabilities& backend : Device::backends()) names.push_back(backend.name);
  return names;
}

std::vector<std::string> board_names() {
  std::vector<std::string> names;
  for (const spec::Board& board : spec::kBoards) names.push_back(board.name);
  return names;
}

std::vector<std::string> schedule_names() {
  using Kind = LearningRateSchedule::Kind;
  std::vector<std::string> names;
  for (Kind kind : {Kind::kConstant, Kind::kCosine, Kind::kExponential, Kind::kStep})
    names.push_back(LearningRateSchedule::name(kind));
  return names;
}

// A value of the logs a callback watches: the loss, a metric's name, or
// either on the validation set (val_). Which names exist depends on the
// metrics, so validate_run_config checks it.
ConfigField monitor(const char* key, std::string RunConfig::*member, const char* help) {
  ConfigField f = field(key, member, help);
  f.values = "loss or a metric's name, either with val_ for the validation set's";
  return f;
}

// A section's switch: on when the section is in the file.
ConfigField section(const char* key, bool RunConfig::*member, const char* help) {
  ConfigField f;
  f.key = key;
  f.type = "section";
  f.help = help;
  f.section_switch = true;
  f.read = [member](const YAML::Node&, RunConfig& config) {
    config.*member = true;
    return ok_status();
  };
  f.write = [member](const RunConfig& config) { return YAML::Node(config.*member); };
  return f;
}

// devices: auto, a count, or a list of unit indices (checked when the
// device is opened, against what it has).
ConfigField devices_field() {
  ConfigField f;
  f.key = "devices";
  f.type = "auto, a count, or a list of unit indices";
  f.help = "the compute units, one replica each";
  f.read = [](const YAML::Node& node, RunConfig& config) -> Status {
    if (node.IsScalar()) {
      config.devices = node.Scalar();
      return ok_status();
    }
    auto units = Value<std::vector<uint32_t>>::read(node);
    if (!units.ok()) return units.status();
    std::string text = "[";
    for (std::size_t i = 0; i < units->size(); ++i) text += (i ? "," : "") + std::to_string((*units)[i]);
    config.devices = text + "]";
    return ok_status();
  };
  f.write = [](const RunConfig& config) -> YAML::Node {
    if (!config.devices.empty() && config.devices.front() == '[') {
      auto units = Value<std::vector<uint32_t>>::read(YAML::Node(config.devices));
      if (units.ok()) return Value<std::vector<uint32_t>>::write(*units);
    }
    return YAML::Node(config.devices);
  };
  return f;
}

// A layer, loss or metric as the file writes it: {type: dense, units: 10}
// (a loss or metric may be its type alone), its fields' values kept as
// written ("3", "[3, 3]") for the class to read.
Status read_typed(const YAML::Node& entry, bool name_alone, LayerConfig& typed) {
  if (name_alone && entry.IsScalar()) {
    typed = {entry.Scalar(), {}};
    return ok_status();
  }
  if (!entry.IsMap() || !entry["type"] || !entry["type"].IsScalar())
    return invalid(": expected a mapping with a type ({type: dense, units: 10})");
  typed = {entry["type"].Scalar(), {}};
  for (const auto& item : entry) {
    const std::string key = item.first.as<std::string>();
    if (key == "type") continue;
    const YAML::Node value = item.second;
    // The text keeps a list as "[3, 3]", so a value must not look like
    // one, nor an item hold what separates items: a silent change of what
    // was written ("[3", an item "3,4" or "") is an error instead.
    std::string text;
    if (value.IsScalar()) {
      text = value.Scalar();
      if (!text.empty() && text.front() == '[')
        return invalid("." + key + ": '" + text + "' is text that looks like a list (write a YAML list)");
    } else if (value.IsSequence()) {
      text = "[";
      for (std::size_t j = 0; j < value.size(); ++j) {
        if (!value[j].IsScalar()) return invalid("." + key + ": expected a value or a list of values");
        const std::string& item = value[j].Scalar();
        if (item.empty() || item.find_first_of(",[]") != std::string::npos)
          return invalid("." + key + "[" + std::to_string(j) + "]: '" + item +
                         "' is not a plain value (empty, or holding ',', '[' or ']')");
        text += (j ? ", " : "") + item;
      }
      text += "]";
    } else {
      return invalid("." + key + ": expected a value or a list of values");
    }
    typed.fields.emplace_back(key, text);
  }
  return ok_status();
}

YAML::Node write_typed(const LayerConfig& typed, bool name_alone) {
  if (name_alone && typed.fields.empty()) return YAML::Node(typed.type);
  YAML::Node node;
  node["type"] = typed.type;
  for (const auto& [key, text] : typed.fields)
    node[key] = !text.empty() && text.front() == '[' ? YAML::Load(text) : YAML::Node(text);
  node.SetStyle(YAML::EmitterStyle::Flow);
  return node;
}

// A list of typed entries (model.layers, train.metrics); errors name the
// entry ("[2].units: ...").
ConfigField typed_list(const char* key, std::vector<LayerConfig> RunConfig::*member, bool name_alone,
                       const char* type, const char* help) {
  ConfigField f;
  f.key = key;
  f.type = type;
  f.help = help;
  f.read = [member, name_alone](const YAML::Node& node, RunConfig& config) -> Status {
    if (!node.IsSequence()) return invalid(std::string("expected a list, got '") + written(node) + "'");
    std::vector<LayerConfig> list(node.size());
    for (std::size_t i = 0; i < node.size(); ++i) {
      const Status status = read_typed(node[i], name_alone, list[i]);
      if (!status.ok()) return invalid("[" + std::to_string(i) + "]" + status.message());
    }
    config.*member = std::move(list);
    return ok_status();
  };
  f.write = [member, name_alone](const RunConfig& config) {
    YAML::Node list(YAML::NodeType::Sequence);
    for (const LayerConfig& typed : config.*member) list.push_back(write_typed(typed, name_alone));
    if ((config.*member).empty() || name_alone) list.SetStyle(YAML::EmitterStyle::Flow);
    return list;
  };
  return f;
}

// model.layers: the model, Keras style.
ConfigField layers_field() {
  ConfigField f = typed_list("model.layers", &RunConfig::layers, false, "list of layers",
                             "the model, Keras style: [{type: conv2d, filters: 32, kernel_size: 3}, ...]");
  f.present = [](const RunConfig& config) { return !config.layers.empty(); };
  // An empty list would leave the model to model.hidden's default stack.
  f.read = [read = f.read](const YAML::Node& node, RunConfig& config) -> Status {
    if (node.IsSequence() && node.size() == 0)
      return invalid(
          "got an empty list (a model needs at least one layer; model.hidden gives a dense stack)");
    return read(node, config);
  };
  return f;
}

// train.loss: a registered loss, its type alone or with its fields.
ConfigField loss_field() {
  ConfigField f;
  f.key = "train.loss";
  f.type = "a loss: its type, or {type, fields}";
  f.help = "the loss (Keras' compile(loss=...))";
  f.values = joined(loss_types());
  f.read = [](const YAML::Node& node, RunConfig& config) -> Status {
    const Status status = read_typed(node, true, config.loss);
    return status.ok() || status.message().front() != ':' ? status : invalid(status.message().substr(2));
  };
  f.write = [](const RunConfig& config) { return write_typed(config.loss, true); };
  f.check = [](const RunConfig& config) { return make_loss(config.loss).status(); };
  return f;
}

ConfigField metrics_field() {
  ConfigField f =
      typed_list("train.metrics", &RunConfig::metrics, true, "list of metrics: types, or {type, fields}",
                 "the metrics (Keras' compile(metrics=[...]))");
  f.values = "each one of " + joined(metric_types());
  f.check = [](const RunConfig& config) -> Status {
    for (std::size_t i = 0; i < config.metrics.size(); ++i) {
      const Status status = make_metric(config.metrics[i]).status();
      if (!status.ok()) return Status(status.code(), "[" + std::to_string(i) + "]." + status.message());
    }
    return ok_status();
  };
  return f;
}

// model.hidden: the dense-stack shorthand; it replaces a layer list.
ConfigField hidden_field() {
  ConfigField f = field("model.hidden", &RunConfig::hidden,
                        "widths of a dense ReLU stack (the shorthand, when there is no layer list)");
  f.read = [](const YAML::Node& node, RunConfig& config) -> Status {
    auto widths = Value<std::vector<uint32_t>>::read(node);
    if (!widths.ok()) return widths.status();
    config.hidden = *widths;
    config.layers.clear();
    return ok_status();
  };
  f.values = "each in [1, 16777216]";
  f.check = [](const RunConfig& config) -> Status {
    if (!config.layers.empty()) return ok_status();
    if (config.hidden.empty()) return invalid("expected a list of layer widths, got []");
    for (uint32_t width : config.hidden)
      if (width == 0 || width > (1u << 24))
        return invalid("'" + std::to_string(width) + "' is not a layer width (1 to 16777216)");
    return ok_status();
  };
  f.present = [](const RunConfig& config) { return config.layers.empty(); };
  return f;
}

// A vocabulary file: one token per line (TextVectorization's format).
Status read_vocabulary(const std::string& path, std::vector<std::string>& tokens) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return invalid("cannot read the vocabulary file '" + path + "'");
  std::string line;
  for (uint64_t number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty())
      return invalid(path + ":" + std::to_string(number) + ": an empty line (one token per line)");
    tokens.push_back(line);
  }
  if (in.bad()) return invalid("cannot read the vocabulary file '" + path + "'");
  if (tokens.empty()) return invalid("the vocabulary file '" + path + "' holds no token");
  return ok_status();
}

// data.features: name -> {dtype, shape, default, hash_buckets} (TensorFlow's
// FixedLenFeature in YAML), and for text {split, length, vocabulary}.
ConfigField features_field() {
  ConfigField f;
  f.key = "data.features";
  f.type = "mapping of feature name to {dtype, shape, default, hash_buckets, split, length, vocabulary}";
  f.help =
      "tfrecord: the records' schema (tf.io.FixedLenFeature); a string with split (words or characters) is "
      "text: length token ids per example, from hash_buckets or a vocabulary file (docs/training.md)";
  f.read = [](const YAML::Node& node, RunConfig& config) -> Status {
    if (!node.IsMap()) return invalid("expected a mapping of name to {dtype, shape, default, hash_buckets}");
    std::vector<FeatureSpec> features;
    for (const auto& entry : node) {
      FeatureSpec spec;
      spec.name = entry.first.as<std::string>();
      const std::string where = spec.name;
      const YAML::Node fields = entry.second;
      if (!fields.IsMap())
        return invalid(where + ": expected a mapping {dtype, shape, default, hash_buckets}");
      for (const auto& item : fields) {
        const std::string key = item.first.as<std::string>();
        if (key != "dtype" && key != "shape" && key != "default" && key != "hash_buckets" && key != "split" &&
            key != "length" && key != "vocabulary")
          return invalid(where + "." + key +
                         ": unknown key (expected one of default, dtype, hash_buckets, length, shape, split, "
                         "vocabulary)");
      }
      std::string dtype = "float32";
      if (fields["dtype"]) {
        auto text = Value<std::string>::read(fields["dtype"]);
        if (!text.ok()) return invalid(where + ".dtype: " + text.status().message());
        dtype = *text;
      }
      auto type = parse_feature_type(dtype);
      if (!type.ok()) return invalid(where + ".dtype: " + type.status().message());
      spec.type = *type;
      if (fields["shape"]) {
        auto shape = Value<std::vector<uint32_t>>::read(fields["shape"]);
        if (!shape.ok()) return invalid(where + ".shape: " + shape.status().message());
        spec.shape.assign(shape->begin(), shape->end());
      }
      if (fields["hash_buckets"]) {
        auto buckets = Value<uint32_t>::read(fields["hash_buckets"]);
        if (!buckets.ok()) return invalid(where + ".hash_buckets: " + buckets.status().message());
        spec.hash_buckets = *buckets;
      }
      if (fields["split"]) {
        auto text = Value<std::string>::read(fields["split"]);
        if (!text.ok()) return invalid(where + ".split: " + text.status().message());
        auto split = parse_text_split(*text);
        if (!split.ok()) return invalid(where + ".split: " + split.status().message());
        spec.split = *split;
      }
      if (fields["length"]) {
        auto length = Value<uint32_t>::read(fields["length"]);
        if (!length.ok()) return invalid(where + ".length: " + length.status().message());
        spec.length = *length;
      }
      if (fields["vocabulary"]) {
        auto path = Value<std::string>::read(fields["vocabulary"]);
        if (!path.ok()) return invalid(where + ".vocabulary: " + path.status().message());
        spec.vocabulary_file = *path;
        Status read = read_vocabulary(*path, spec.vocabulary);
        if (!read.ok()) return invalid(where + ".vocabulary: " + read.message());
      }
      if (const YAML::Node value = fields["default"]) {
        spec.has_default = true;
        std::vector<YAML::Node> items;  // one value, or shape-many
        if (value.IsSequence()) {
          for (std::size_t i = 0; i < value.size(); ++i) items.push_back(value[i]);
        } else {
          items.push_back(value);
        }
        for (const YAML::Node& item : items) {
          if (!item.IsScalar())
            return invalid(where + ".default: cannot read '" + written(value) + "' as " + dtype);
          if (spec.type == FeatureType::kBytes) {
            spec.default_bytes.push_back(item.Scalar());
            continue;
          }
          auto number = parse_number(item.Scalar());
          if (!number.ok())
            return invalid(where + ".default: cannot read '" + written(value) + "' as " + dtype + " values");
          spec.default_numbers.push_back(*number);
        }
      }
      features.push_back(std::move(spec));
    }
    config.features = std::move(features);
    return ok_status();
  };
  f.write = [](const RunConfig& config) {
    YAML::Node map(YAML::NodeType::Map);
    for (const FeatureSpec& spec : config.features) {
      YAML::Node node;
      node["dtype"] = feature_type_name(spec.type);
      YAML::Node shape(YAML::NodeType::Sequence);
      for (uint64_t d : spec.shape) shape.push_back(d);
      if (!spec.text()) node["shape"] = shape;
      if (spec.hash_buckets) node["hash_buckets"] = spec.hash_buckets;
      if (spec.text()) {
        node["split"] = text_split_name(spec.split);
        node["length"] = spec.length;
        if (!spec.vocabulary_file.empty()) node["vocabulary"] = spec.vocabulary_file;
      }
      if (spec.has_default) {
        YAML::Node values(YAML::NodeType::Sequence);
        for (const std::string& bytes : spec.default_bytes) values.push_back(bytes);
        for (double number : spec.default_numbers) values.push_back(number_text(number, false));
        node["default"] = values;
      }
      node.SetStyle(YAML::EmitterStyle::Flow);
      map[spec.name] = node;
    }
    if (config.features.empty()) map.SetStyle(YAML::EmitterStyle::Flow);
    return map;
  };
  return f;
}

bool early_stopping_on(const RunConfig& c) { return c.early_stopping; }
bool ranking_on(const RunConfig& c) { return c.ranking; }

std::vector<ConfigField> make_fields() {
  using C = RunConfig;
  std::vector<ConfigField> f;
  // The device.
  ConfigField backend = choice("backend", &C::backend, backend_names, "the device's backend");
  backend.values = "those of the build: sw_emu, hw_emu, xrt, perf, uart";  // the same text in every build
  f.push_back(backend.with_flag("--backend"));
  f.push_back(field("device", &C::device, "which board: xrt's device index, or uart's serial port")
                  .with_flag("--device")
                  .per_process());
  f.push_back(devices_field().with_flag("--devices").per_process());
  f.push_back(field("array", &C::array, "ROWSxCOLS of an emulated device's array").with_flag("--array"));
  f.push_back(choice("engine", &C::engine, fixed({"fast", "hls"}), "sw_emu's engine").with_flag("--engine"));
  f.push_back(field("xclbin", &C::xclbin, "xrt: the bitstream").with_flag("--xclbin").per_process());
  f.push_back(choice("perf.board", &C::board, board_names, "perf: the board modelled").with_flag("--board"));
  f.push_back(
      number("perf.clock_mhz", &C::clock_mhz, closed(0, 1000), "perf: the kernel clock (0: the board's)")
          .with_flag("--clock-mhz"));
  f.push_back(
      number("perf.pcie_gen", &C::pcie_gen, closed(0, 6), "perf: the PCIe generation (0: the board's)")
          .with_flag("--pcie-gen"));
  f.push_back(
      number("perf.pcie_lanes", &C::pcie_lanes, closed(0, 16), "perf: the PCIe lanes (0: the board's)")
          .with_flag("--pcie-lanes"));
  // The model.
  f.push_back(layers_field());
  f.push_back(hidden_field().with_flag("--hidden"));
  f.push_back(field("model.input_shape", &C::input_shape, "one example's shape (empty: the data's)"));
  f.push_back(
      number("model.classes", &C::classes, closed(0, 1u << 24), "classes (0: from the training labels)")
          .with_flag("--classes"));
  f.push_back(field("model.initial_weights", &C::initial_weights,
                    "a safetensors file of weights to start from, by PyTorch's state_dict names (empty: "
                    "initialised from train.seed)")
                  .with_flag("--initial-weights"));
  // The data.
  f.push_back(choice("data.format", &C::data_format, fixed({"idx", "tfrecord"}), "the data's files"));
  f.push_back(field("data.dir", &C::data_dir, "idx: an MNIST-style directory").with_flag("--data-dir"));
  f.push_back(number("data.validation_examples", &C::validation_examples, closed(0, 1u << 30),
                     "idx: examples held out from the end of the training set for validation")
                  .with_flag("--validation-examples"));
  f.push_back(number("data.test_examples", &C::test_examples, closed(0, 1u << 30),
                     "the test set's first examples evaluated after training (0: all of them)")
                  .with_flag("--test-examples"));
  f.push_back(field("data.train", &C::train_files, "tfrecord: the training files' pattern(s)"));
  f.push_back(field("data.validation", &C::validation_files, "tfrecord: the validation files' pattern(s)"));
  f.push_back(field("data.test", &C::test_files, "tfrecord: the test files' pattern(s)"));
  f.push_back(features_field());
  f.push_back(field("data.inputs", &C::inputs, "tfrecord: the features that feed the model, in order"));
  f.push_back(field("data.label", &C::label, "tfrecord: the label feature"));
  f.push_back(number("data.shuffle_buffer", &C::shuffle_buffer, closed(0, 1u << 24),
                     "tfrecord: records in the shuffle buffers, shared out among the replicas' pipelines (0: "
                     "no shuffling)"));
  f.push_back(
      number("data.cycle_length", &C::cycle_length, closed(1, 1024), "tfrecord: files read interleaved"));
  f.push_back(number("data.threads", &C::data_threads, closed(1, 256),
                     "tfrecord: reader threads of each replica's pipeline")
                  .per_process());
  f.push_back(number("data.prefetch", &C::prefetch, closed(1, 1024), "tfrecord: batches prepared ahead")
                  .per_process());
  f.push_back(
      field("data.skip_corrupt", &C::skip_corrupt, "tfrecord: skip a corrupt record instead of failing"));
  f.push_back(choice("data.compression", &C::compression, fixed({"auto", "none", "gzip", "zlib"}),
                     "tfrecord: how the files are compressed (TFRecordOptions' compression_type; auto: by "
                     "their first bytes)"));
  f.push_back(number("data.negatives.count", &C::negatives, closed(0, 1000),
                     "tfrecord: sampled negatives per positive"));
  f.push_back(
      field("data.negatives.feature", &C::negative_feature, "tfrecord: the feature the negatives redraw"));
  // Training.
  f.push_back(number("train.epochs", &C::epochs, at_least(1), "epochs").with_flag("--epochs"));
  f.push_back(number("train.steps_per_epoch", &C::steps_per_epoch, at_least(0), "batches per epoch (0: all)")
                  .with_flag("--steps-per-epoch"));
  f.push_back(number("train.global_batch", &C::global_batch, closed(1, 1u << 24),
                     "examples per step over all replicas")
                  .with_flag("--global-batch"));
  f.push_back(choice("train.optimizer", &C::optimizer, optimizer_names, "the optimizer of the dense tensors")
                  .with_flag("--optimizer"));
  f.push_back(choice("train.placement", &C::placement, fixed({"host", "device"}),
                     "where parameters, gradients and optimizer state live between steps")
                  .with_flag("--placement"));
  f.push_back(loss_field());
  f.push_back(metrics_field());
  f.push_back(number("train.learning_rate", &C::learning_rate, positive(), "the base learning rate")
                  .with_flag("--learning-rate"));
  f.push_back(choice("train.schedule", &C::schedule, schedule_names, "the learning-rate schedule over steps")
                  .with_flag("--schedule"));
  f.push_back(number("train.decay_steps", &C::decay_steps, at_least(0),
                     "the schedule's period (cosine 0: the rest of the run)")
                  .with_flag("--decay-steps"));
  f.push_back(number("train.decay_rate", &C::decay_rate, open_closed(0, 1), "exponential, step: the decay")
                  .with_flag("--decay-rate"));
  f.push_back(number("train.warmup_steps", &C::warmup_steps, at_least(0), "steps of linear warmup")
                  .with_flag("--warmup-steps"));
  f.push_back(number("train.momentum", &C::momentum, closed_open(0, 1), "sgd, lars: momentum")
                  .with_flag("--momentum"));
  f.push_back(field("train.nesterov", &C::nesterov, "sgd, lars: Nesterov momentum"));
  f.push_back(number("train.beta1", &C::beta1, closed_open(0, 1), "adam, adamw: the first moment's decay"));
  f.push_back(number("train.beta2", &C::beta2, closed_open(0, 1), "adam, adamw: the second moment's decay"));
  f.push_back(
      number("train.epsilon", &C::epsilon, positive(), "adam, adamw, adagrad and the tables' Adagrad"));
  f.push_back(number("train.initial_accumulator", &C::initial_accumulator, at_least(0),
                     "adagrad: the accumulators' start"));
  f.push_back(
      number("train.trust_coefficient", &C::trust_coefficient, positive(), "lars: eta of the trust ratio"));
  ConfigField decay =
      field("train.weight_decay", &C::weight_decay, "weight decay (~: adamw 0.004, lars 1e-4, the others 0)");
  decay.values = ">= 0";
  decay.check = [](const RunConfig& c) -> Status {
    if (!c.weight_decay || (*c.weight_decay >= 0 && std::isfinite(*c.weight_decay))) return ok_status();
    return invalid("must be a number >= 0, got " + number_text(*c.weight_decay, true));
  };
  f.push_back(decay.with_flag("--weight-decay"));
  f.push_back(
      number("train.clipnorm", &C::clipnorm, at_least(0), "each tensor's gradient norm at most (0: off)")
          .with_flag("--clipnorm"));
  f.push_back(number("train.global_clipnorm", &C::global_clipnorm, at_least(0),
                     "all dense gradients' joint norm at most (0: off)")
                  .with_flag("--global-clipnorm"));
  f.push_back(number("train.embedding_learning_rate", &C::embedding_learning_rate, positive(),
                     "Adagrad on embedding tables' touched rows"));
  f.push_back(number("train.embedding_initial_accumulator", &C::embedding_initial_accumulator, at_least(0),
                     "the tables' Adagrad accumulators' start"));
  f.push_back(
      number("train.seed", &C::seed, at_least(0), "initial values, shuffling, dropout").with_flag("--seed"));
  f.push_back(number("train.steps_per_execution", &C::steps_per_execution, closed(1, 1u << 16),
                     "evaluation batches per command list")
                  .with_flag("--steps-per-execution"));
  f.push_back(number("train.launch_timeout_s", &C::launch_timeout_s, open_closed(0, 7 * 86400),
                     "the longest launch on a unit, in seconds")
                  .with_flag("--launch-timeout"));
  f.push_back(number("train.log_every", &C::log_every, at_least(0),
                     "a progress line every N steps when stdout is not a terminal (0: per epoch)")
                  .with_flag("--log-every")
                  .per_process());
  // Checkpoints and callbacks.
  f.push_back(field("checkpoint.dir", &C::checkpoint_dir, "where checkpoints go (empty: none)")
                  .with_flag("--checkpoint-dir"));
  f.push_back(
      field("checkpoint.resume", &C::resume, "resume from checkpoint.dir").with_flag("--resume").as_switch());
  f.push_back(field("checkpoint.save_best_only", &C::save_best_only,
                    "write the checkpoint only after an epoch that improves checkpoint.monitor"));
  f.push_back(monitor("checkpoint.monitor", &C::checkpoint_monitor, "save_best_only's value"));
  f.push_back(section("callbacks.early_stopping", &C::early_stopping, "Keras' EarlyStopping, when present"));
  f.push_back(monitor("callbacks.early_stopping.monitor", &C::early_stopping_monitor, "the value watched")
                  .only_when(early_stopping_on));
  f.push_back(number("callbacks.early_stopping.patience", &C::early_stopping_patience, at_least(0),
                     "epochs without improvement before stopping")
                  .only_when(early_stopping_on));
  f.push_back(number("callbacks.early_stopping.min_delta", &C::early_stopping_min_delta, at_least(0),
                     "the least change that counts as improvement")
                  .only_when(early_stopping_on));
  f.push_back(field("callbacks.early_stopping.restore_best_weights", &C::early_stopping_restore_best,
                    "end with the best epoch's weights")
                  .only_when(early_stopping_on));
  f.push_back(
      field("callbacks.terminate_on_nan", &C::terminate_on_nan, "a NaN or infinite loss ends the run"));
  f.push_back(
      field("callbacks.csv_logger.filename", &C::csv_logger_filename, "a CSV line per epoch (empty: none)")
          .with_flag("--csv-log")
          .per_process());
  f.push_back(
      field("callbacks.csv_logger.append", &C::csv_append, "append to an existing file").per_process());
  f.push_back(field("tensorboard.dir", &C::tensorboard_dir, "TensorBoard event files (empty: none)")
                  .with_flag("--tensorboard")
                  .per_process());
  f.push_back(number("tensorboard.update_freq", &C::tensorboard_update_freq, at_least(0),
                     "batch scalars every N steps (0: epoch scalars only)")
                  .per_process());
  f.push_back(field("trace", &C::trace_file, "a Chrome/Perfetto trace of every step (empty: none)")
                  .with_flag("--trace")
                  .per_process());
  f.push_back(field("retrace", &C::retrace_dir,
                    "a directory for the initial weights, every training batch and the evaluation sets as "
                    "the model sees them, for another framework to retrace the run (empty: none)")
                  .with_flag("--retrace"));
  f.push_back(
      section("ranking", &C::ranking, "rank a two-tower model's test set after training, when present"));
  f.push_back(number("ranking.k", &C::ranking_k, closed(1, 1000), "recall@k").only_when(ranking_on));
  f.push_back(
      number("ranking.users", &C::ranking_users, closed(1, 1u << 24), "users ranked at most (sampled)")
          .only_when(ranking_on));
  f.push_back(number("mpi.timeout_s", &C::mpi_timeout_s, open_closed(0, 7 * 86400),
                     "the longest wait for another process, in seconds")
                  .with_flag("--mpi-timeout"));
  return f;
}

}  // namespace

ConfigField& ConfigField::with_flag(const char* name) {
  flag = name;
  return *this;
}

ConfigField& ConfigField::per_process() {
  job_wide = false;
  return *this;
}

ConfigField& ConfigField::as_switch() {
  switch_flag = true;
  return *this;
}

ConfigField& ConfigField::only_when(std::function<bool(const RunConfig&)> predicate) {
  present = std::move(predicate);
  return *this;
}

const std::vector<ConfigField>& config_fields() {
  static const std::vector<ConfigField> fields = make_fields();
  return fields;
}

}  // namespace systole
