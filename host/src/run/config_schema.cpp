// SPDX-License-Identifier: Apache-2.0
// What the table of config keys drives: reading a file (unknown keys,
// types), flags, range checks, --print-config and the reference.
#include "config_schema.h"

#include <cstdlib>
#include <set>
#include <sstream>

#include "config_value.h"

namespace systole {
namespace {

using config::invalid;
using config::joined;
using config::written;

// Where `key` starts a section of the table: "train" of "train.epochs".
bool is_section(const std::string& path) {
  for (const ConfigField& field : config_fields())
    if (field.key.size() > path.size() && field.key.compare(0, path.size(), path) == 0 &&
        field.key[path.size()] == '.')
      return true;
  return false;
}

// Every key of the mapping at `path` must be a field or a section.
Status check_keys(const YAML::Node& node, const std::string& path) {
  const std::string where = path.empty() ? std::string("the file") : path;
  if (!node.IsMap()) return invalid(where + " must be a mapping, got '" + written(node) + "'");
  std::set<std::string> expected;
  for (const ConfigField& field : config_fields()) {
    if (!path.empty() && field.key.compare(0, path.size() + 1, path + ".") != 0) continue;
    const std::string rest = path.empty() ? field.key : field.key.substr(path.size() + 1);
    expected.insert(rest.substr(0, rest.find('.')));
  }
  for (const auto& entry : node) {
    if (!entry.first.IsScalar())
      return invalid(where + ": a key at line " + std::to_string(entry.first.Mark().line + 1) +
                     " is not a plain name");
    const std::string key = entry.first.Scalar();
    const std::string full = path.empty() ? key : path + "." + key;
    if (!expected.count(key))
      return invalid(full + ": unknown key (expected one of " + joined({expected.begin(), expected.end()}) +
                     ")");
    if (is_section(full)) SYSTOLE_RETURN_IF_ERROR(check_keys(entry.second, full));
  }
  return ok_status();
}

// An error of the field `key`: "model.layers[2].units: ...", "train.epochs: ...".
std::string at(const std::string& key, const std::string& message) {
  return key + (!message.empty() && message.front() == '[' ? "" : ": ") + message;
}

// The node at a dotted path, or an undefined node. (Const access: a
// missing key must not be added to the file's tree.)
YAML::Node lookup(const YAML::Node& node, const std::string& key) {
  const std::size_t dot = key.find('.');
  const YAML::Node next = node[key.substr(0, dot)];
  if (!next || dot == std::string::npos) return next;
  return lookup(next, key.substr(dot + 1));
}

}  // namespace

Status read_config_fields(const YAML::Node& root, RunConfig& config) {
  SYSTOLE_RETURN_IF_ERROR(check_keys(root, ""));
  if (lookup(root, "model.hidden") && lookup(root, "model.layers"))
    return invalid("model: give either hidden (a dense stack) or layers, not both");
  for (const ConfigField& field : config_fields()) {
    try {
      const YAML::Node node = lookup(root, field.key);
      if (!node) continue;
      // A list in the file is a YAML list; only a flag's text may be "256,128".
      if (field.type == config::Value<std::vector<uint32_t>>::kType && !node.IsSequence())
        return invalid(field.key + ": expected a list such as [" + written(node) + "], got '" +
                       written(node) + "'");
      const Status status = field.read(node, config);
      if (!status.ok()) return Status(status.code(), at(field.key, status.message()));
    } catch (const YAML::Exception& e) {  // a conversion no check foresaw
      return invalid(field.key + ": " + e.what());
    }
  }
  return ok_status();
}

std::vector<const ConfigKey*> config_keys() {
  std::vector<const ConfigKey*> keys;
  for (const ConfigField& field : config_fields()) keys.push_back(&field);
  return keys;
}

// The field of the table that `key` (one of config_keys()) describes.
static const ConfigField& field_of(const ConfigKey& key) {
  for (const ConfigField& field : config_fields())
    if (&field == &key) return field;
  std::abort();  // not a key of the table: a caller's bug, not input
}

Status set_config_key(const ConfigKey& key, const std::string& text, RunConfig& config) {
  const Status status = field_of(key).read(YAML::Node(text), config);
  if (status.ok()) return status;
  return Status(status.code(), key.flag + " (" + key.key + "): " + status.message());
}

Status check_config_fields(const RunConfig& config) {
  for (const ConfigField& field : config_fields()) {
    if (!field.check || (field.present && !field.present(config))) continue;
    const Status status = field.check(config);
    if (!status.ok()) return Status(status.code(), at(field.key, status.message()));
  }
  return ok_status();
}

std::string config_key_text(const ConfigKey& key, const RunConfig& config) {
  return written(field_of(key).write(config));
}

std::string config_yaml(const RunConfig& config) {
  YAML::Node root(YAML::NodeType::Map);
  for (const ConfigField& field : config_fields()) {
    if (field.present && !field.present(config)) continue;
    if (field.section_switch) continue;  // its keys below say it is on
    // Walk to the parent mapping, making sections as needed.
    std::vector<std::string> parts;
    std::stringstream stream(field.key);
    for (std::string part; std::getline(stream, part, '.');) parts.push_back(part);
    std::vector<YAML::Node> chain{root};
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) chain.push_back(chain.back()[parts[i]]);
    chain.back()[parts.back()] = field.write(config);
  }
  YAML::Emitter out;
  out << root;
  return std::string(out.c_str()) + "\n";
}

std::string config_reference() {
  const RunConfig defaults;
  std::string text =
      "# accel_train's configuration keys\n\n"
      "Generated by `accel_train --config-reference` from the one table of keys\n"
      "(`host/src/run/config_fields.cpp`); the `config_reference_is_current` test\n"
      "fails when this file and the table differ. A key is written in the YAML file\n"
      "by its dotted path (`train.epochs` is `epochs:` under `train:`); a flag\n"
      "overrides the file. `accel_train --print-config` prints the effective\n"
      "configuration, every key with its value, as a file that reads back to it.\n"
      "Keys marked *per process* may differ between the processes of an mpirun\n"
      "job; every other key must be the same on all of them (checked at start).\n\n"
      "| Key | Flag | Type | Default | Allowed | Meaning |\n"
      "|---|---|---|---|---|---|\n";
  auto cell = [](std::string value) {
    std::string escaped;
    for (char c : value) escaped += c == '|' ? std::string("\\|") : std::string(1, c);
    return escaped;
  };
  for (const ConfigField& field : config_fields()) {
    std::string value = field.section_switch ? "off" : config_key_text(field, defaults);
    if (value.empty()) value = "\"\"";
    text += "| `" + field.key + "` | " + (field.flag.empty() ? "" : "`" + field.flag + "`") + " | " +
            field.type + " | `" + cell(value) + "` | " + cell(field.values) + " | " + cell(field.help) +
            (field.job_wide ? "" : " *(per process)*") + " |\n";
  }
  return text;
}

}  // namespace systole
