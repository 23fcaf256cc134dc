// SPDX-License-Identifier: Apache-2.0
// The run library's configuration keys, each declared once: its place in the
// YAML file, type, default (the RunConfig's, which takes the library's),
// allowed values, help, command-line flag and whether every process of an
// mpirun job must agree on it. The one table drives reading files and
// flags, the range checks, --help, --print-config, the ranks' agreement
// check and the generated reference (docs/config.md).
#pragma once

#include <yaml-cpp/yaml.h>

#include <functional>
#include <string>
#include <vector>

#include "systole/run/config.h"  // ConfigKey

namespace systole {

// A key's description (systole/run/config.h) and what reads, writes and
// checks it.
struct ConfigField : ConfigKey {
  // Reads the field's node (a flag's value arrives as a scalar); errors
  // say what is wrong without the key, the caller adds where.
  std::function<Status(const YAML::Node& node, RunConfig& config)> read;
  // The field's value as YAML.
  std::function<YAML::Node(const RunConfig& config)> write;
  // The range check; errors without the key. Null: any value read is valid.
  std::function<Status(const RunConfig& config)> check;
  // Whether the field is part of the effective config (a section's keys
  // only when the section is on; model.hidden only without layers).
  std::function<bool(const RunConfig& config)> present;

  // Table-building steps, chained after a field(...) call.
  ConfigField& with_flag(const char* name);
  ConfigField& per_process();  // not job-wide
  ConfigField& as_switch();
  ConfigField& only_when(std::function<bool(const RunConfig&)> predicate);
};

// Every field, in the order of the file's sections.
const std::vector<ConfigField>& config_fields();

// Reads a parsed file into `config`: unknown keys, values of the wrong type
// are errors naming the key ("train.epochz: unknown key ...").
Status read_config_fields(const YAML::Node& root, RunConfig& config);

// Each field's range check; errors name the key and quote the value.
Status check_config_fields(const RunConfig& config);

}  // namespace systole
