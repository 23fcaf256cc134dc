// SPDX-License-Identifier: Apache-2.0
#include "command_line.h"

#include <CLI/CLI.hpp>
#include <functional>
#include <sstream>
#include <vector>

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
  TrainConfig config;
  // Overrides: each flag names the config field it sets, and is applied
  // on top of the file only when given; a repeated one takes its last
  // value, so appending to a command line overrides it.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  std::vector<std::function<void(TrainConfig&)>> overrides;
  auto flag = [&](const char* name, auto TrainConfig::*field, const char* help) {
    CLI::Option* option = app.add_option(name, config.*field, help);
    overrides.push_back([&config, field, option](TrainConfig& merged) {
      if (option->count() > 0) merged.*field = config.*field;
    });
  };
  flag("--backend", &TrainConfig::backend, "backend");
  flag("--device", &TrainConfig::device, "device: which board: xrt's device index, or uart's serial port");
  flag("--devices", &TrainConfig::devices, "devices: the compute units: auto, a count, or [0,2]");
  flag("--array", &TrainConfig::array, "array: ROWSxCOLS (emulated devices)");
  flag("--engine", &TrainConfig::engine, "engine: fast or hls (sw_emu)");
  flag("--xclbin", &TrainConfig::xclbin, "xclbin: the bitstream (xrt)");
  flag("--board", &TrainConfig::board, "perf.board: the board modelled (u55c, u280, u50, hypothetical)");
  flag("--clock-mhz", &TrainConfig::clock_mhz, "perf.clock_mhz: kernel clock (0: the board's)");
  flag("--pcie-gen", &TrainConfig::pcie_gen, "perf.pcie_gen: PCIe generation (0: the board's)");
  flag("--pcie-lanes", &TrainConfig::pcie_lanes, "perf.pcie_lanes: PCIe lanes (0: the board's)");
  flag("--data-dir", &TrainConfig::data_dir, "data.dir");
  flag("--validation-examples", &TrainConfig::validation_examples, "data.validation_examples");
  flag("--epochs", &TrainConfig::epochs, "train.epochs");
  flag("--global-batch", &TrainConfig::global_batch, "train.global_batch");
  flag("--optimizer", &TrainConfig::optimizer, "train.optimizer: adam or sgd");
  flag("--learning-rate", &TrainConfig::learning_rate, "train.learning_rate");
  flag("--schedule", &TrainConfig::schedule, "train.schedule: constant, cosine, exponential or step");
  flag("--warmup-steps", &TrainConfig::warmup_steps, "train.warmup_steps: linear warmup");
  flag("--decay-steps", &TrainConfig::decay_steps, "train.decay_steps");
  flag("--decay-rate", &TrainConfig::decay_rate, "train.decay_rate");
  flag("--momentum", &TrainConfig::momentum, "train.momentum");
  flag("--seed", &TrainConfig::seed, "train.seed");
  flag("--steps-per-execution", &TrainConfig::steps_per_execution,
       "train.steps_per_execution: evaluation batches per command list");
  flag("--steps-per-epoch", &TrainConfig::steps_per_epoch,
       "train.steps_per_epoch: batches per epoch (0: all)");
  flag("--log-every", &TrainConfig::log_every,
       "train.log_every: a progress line every N steps when not on a terminal");
  flag("--launch-timeout", &TrainConfig::launch_timeout_s,
       "train.launch_timeout_s: longest launch on a unit");
  flag("--classes", &TrainConfig::classes, "model.classes (0: from the labels)");
  flag("--checkpoint-dir", &TrainConfig::checkpoint_dir, "checkpoint.dir");
  flag("--tensorboard", &TrainConfig::tensorboard_dir, "tensorboard.dir: event files");
  flag("--csv-log", &TrainConfig::csv_log, "callbacks.csv_logger.filename");
  flag("--trace", &TrainConfig::trace_file, "trace: a Chrome/Perfetto trace of every step");
  flag("--mpi-timeout", &TrainConfig::mpi_timeout_s, "mpi.timeout_s: longest wait for another rank (mpirun)");
  CLI::Option* o_resume = app.add_flag("--resume", config.resume, "checkpoint.resume");
  std::string hidden;
  CLI::Option* o_hidden = app.add_option("--hidden", hidden, "model.hidden, e.g. 256,128");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    line.exit_code = app.exit(e) == 0 ? 0 : 2;
    return line;
  }
  // The file first, then the command line on top of it.
  TrainConfig merged;
  if (!config_path.empty()) {
    const Status status = load_train_config(config_path, merged);
    if (!status.ok()) return status;
  }
  for (const auto& apply : overrides) apply(merged);
  if (o_resume->count() > 0) merged.resume = config.resume;
  if (o_hidden->count() > 0) {
    merged.hidden.clear();
    merged.layers.clear();
    std::stringstream text(hidden);
    std::string item;
    while (std::getline(text, item, ',')) {
      // Digits only, at most 2^24: "2junk" or "-1" is refused, not cut short.
      if (item.empty() || item.size() > 8 || item.find_first_not_of("0123456789") != std::string::npos ||
          std::stoul(item) == 0 || std::stoul(item) > (1u << 24)) {
        return Status(StatusCode::kInvalidArgument,
                      "--hidden: '" + item + "' is not a layer width (1 to 16777216)");
      }
      merged.hidden.push_back(uint32_t(std::stoul(item)));
    }
  }
  line.config = std::move(merged);
  if (mode == Mode::kTrain &&
      (!infer_options.checkpoint.empty() || !infer_options.input.empty() || !infer_options.output.empty()))
    return Status(StatusCode::kInvalidArgument,
                  "--checkpoint, --input and --output belong to evaluate and predict");
  return line;
}

}  // namespace systole
