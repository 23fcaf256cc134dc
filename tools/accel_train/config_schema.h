// SPDX-License-Identifier: Apache-2.0
// accel_train's configuration keys, each declared once: its place in the
// YAML file, type, default (the TrainConfig's, which takes the library's),
// allowed values, help, command-line flag and whether every process of an
// mpirun job must agree on it. The one table drives reading files and
// flags, the range checks, --help, --print-config, the ranks' agreement
// check and the generated reference (docs/config.md).
#pragma once

#include <yaml-cpp/yaml.h>

#include <functional>
#include <string>
#include <vector>

#include "train_config.h"

namespace systole {

struct ConfigField {
  std::string key;     // dotted path in the file: "train.epochs"
  std::string flag;    // "--epochs"; empty: file only
  std::string type;    // for people: "integer", "number", "text", ...
  std::string values;  // the allowed values for people: ">= 1", "fast, hls"; empty: any
  std::string help;
  bool job_wide = true;      // every process of a job must have the same value
  bool switch_flag = false;  // the flag takes no value and sets true
  // A section's switch (callbacks.early_stopping): on when the section is
  // in the file; the section's own keys are fields of their own.
  bool section_switch = false;

  // Reads the field's node (a flag's value arrives as a scalar); errors
  // say what is wrong without the key, the caller adds where.
  std::function<Status(const YAML::Node& node, TrainConfig& config)> read;
  // The field's value as YAML.
  std::function<YAML::Node(const TrainConfig& config)> write;
  // The range check; errors without the key. Null: any value read is valid.
  std::function<Status(const TrainConfig& config)> check;
  // Whether the field is part of the effective config (a section's keys
  // only when the section is on; model.hidden only without layers).
  std::function<bool(const TrainConfig& config)> present;

  // Table-building steps, chained after a field(...) call.
  ConfigField& with_flag(const char* name);
  ConfigField& per_process();  // not job-wide
  ConfigField& as_switch();
  ConfigField& only_when(std::function<bool(const TrainConfig&)> predicate);
};

// Every field, in the order of the file's sections.
const std::vector<ConfigField>& config_fields();

// Reads a parsed file into `config`: unknown keys, values of the wrong type
// are errors naming the key ("train.epochz: unknown key ...").
Status read_config_fields(const YAML::Node& root, TrainConfig& config);

// Sets the field `field` from a flag's text; errors name the flag and key.
Status set_field_from_flag(const ConfigField& field, const std::string& text, TrainConfig& config);

// Each field's range check; errors name the key and quote the value.
Status check_config_fields(const TrainConfig& config);

// The field's value as one line of YAML ("[256, 128]", "adam").
std::string field_text(const ConfigField& field, const TrainConfig& config);

// The whole effective config as a YAML file that reads back to it.
std::string config_yaml(const TrainConfig& config);

// The Markdown reference of every key, docs/config.md.
std::string config_reference();

}  // namespace systole
