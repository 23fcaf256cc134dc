// SPDX-License-Identifier: Apache-2.0
#include "command_line.h"

#include <CLI/CLI.hpp>
#include <deque>
#include <utility>
#include <vector>

#include "systole/run/config.h"
#include "systole/version.h"

namespace systole {

Result<CommandLine> parse_command_line(int argc, char** argv) {
  CommandLine line;
  CLI::App app{
      "Train a model on Fashion-MNIST (or any IDX data set) on a Systole device.\n"
      "  accel_train [train] --config F [overrides]\n"
      "  accel_train evaluate --checkpoint F [--config F] [overrides]\n"
      "  accel_train predict --checkpoint F --input X.npy --output Y.npy"};
  // The mode is the first argument, if it names one.
  Mode& mode = line.mode;
  if (argc > 1 && (std::string(argv[1]) == "train" || std::string(argv[1]) == "evaluate" ||
                   std::string(argv[1]) == "predict")) {
    const std::string word = argv[1];
    mode = word == "evaluate" ? Mode::kEvaluate : word == "predict" ? Mode::kPredict : Mode::kTrain;
    argv[1] = argv[0];
    ++argv;
    --argc;
  }
  app.set_version_flag("--version", std::string("accel_train (Systole) ") + kVersion);
  std::string config_path;
  InferOptions& infer_options = line.infer;
  app.add_option("--config", config_path, "YAML configuration (see configs/)");
  app.add_option("--checkpoint", infer_options.checkpoint,
                 "evaluate, predict: a checkpoint.safetensors or model.safetensors");
  app.add_option("--input", infer_options.input, "predict: float32 .npy of examples");
  app.add_option("--output", infer_options.output, "predict: where the float32 .npy of logits goes");
  app.add_flag("--print-config", line.print_config,
               "print the effective configuration (the file, then the flags) as YAML and exit");
  app.add_flag("--config-reference", line.print_reference,
               "print the reference of every config key (Markdown)");
  // Overrides: one flag per config key that has one, from the schema's
  // table, applied on top of the file only when given; a repeated one
  // takes its last value, so appending to a command line overrides it.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  const RunConfig defaults;
  std::deque<std::string> texts;  // stable addresses for CLI11
  std::vector<std::pair<const ConfigKey*, CLI::Option*>> flags;
  for (const ConfigKey* key : config_keys()) {
    if (key->flag.empty()) continue;
    const std::string help = key->key + ": " + key->help + (key->values.empty() ? "" : "; " + key->values);
    CLI::Option* option = nullptr;
    if (key->switch_flag) {
      option = app.add_flag(key->flag, help);
    } else {
      texts.emplace_back();
      option = app.add_option(key->flag, texts.back(), help)
                   ->default_str(config_key_text(*key, defaults))
                   ->type_name(key->type == "integer"         ? "INT"
                               : key->type == "number"        ? "NUMBER"
                               : key->type == "true or false" ? "BOOL"
                                                              : "TEXT");
    }
    flags.emplace_back(key, option);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    line.exit_code = app.exit(e) == 0 ? 0 : 2;
    return line;
  }
  // The file first, then the command line on top of it.
  RunConfig merged;
  if (!config_path.empty()) {
    const Status status = load_run_config(config_path, merged);
    if (!status.ok()) return status;
  }
  for (const auto& [key, option] : flags) {
    if (option->count() == 0) continue;
    const std::string text = key->switch_flag ? "true" : option->as<std::string>();
    SYSTOLE_RETURN_IF_ERROR(set_config_key(*key, text, merged));
  }
  line.config = std::move(merged);
  if (mode == Mode::kTrain &&
      (!infer_options.checkpoint.empty() || !infer_options.input.empty() || !infer_options.output.empty()))
    return Status(StatusCode::kInvalidArgument,
                  "--checkpoint, --input and --output belong to evaluate and predict");
  return line;
}

}  // namespace systole
