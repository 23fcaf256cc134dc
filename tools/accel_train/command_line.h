// SPDX-License-Identifier: Apache-2.0
// accel_train's command line: the mode, the config file, and the flags
// that override its fields.
#pragma once

#include <optional>
#include <string>

#include "systole/run/config.h"

namespace systole {

enum class Mode { kTrain, kEvaluate, kPredict };

// evaluate and predict: where the weights come from, predict's input and
// output.
struct InferOptions {
  std::string checkpoint, input, output;
};

struct CommandLine {
  Mode mode = Mode::kTrain;
  RunConfig config;  // the file's, then the flags on top
  InferOptions infer;
  // Set when the command line asked for --help (or was malformed): exit
  // with this code after CLI11 has printed what it prints.
  std::optional<int> exit_code;
  // --print-config: print `config` as YAML and exit; --config-reference:
  // print the reference of every key and exit.
  bool print_config = false, print_reference = false;
};

// Reads argv; an error names the flag or the config file's field.
Result<CommandLine> parse_command_line(int argc, char** argv);

}  // namespace systole
