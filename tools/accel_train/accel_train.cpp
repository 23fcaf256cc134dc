// accel_train: trains an MLP on Fashion-MNIST (or any IDX data set) on a
// Systole device, one replica per compute unit, with Keras-style progress,
// validation each epoch, the test accuracy at the end, and safetensors
// checkpoints that a PyTorch user can open and training can resume from.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>

#include "systole/checkpoint.h"
#include "systole/dataset.h"
#include "systole/mpi_process_group.h"
#include "systole/trainer.h"
#include "train_config.h"

namespace {

using namespace systole;
using Clock = std::chrono::steady_clock;

std::string join(const std::vector<uint32_t>& values, const char* separator) {
  std::string text;
  for (std::size_t i = 0; i < values.size(); ++i) text += (i ? separator : "") + std::to_string(values[i]);
  return text;
}

// "  7/469 [>.............................] - 1s 15ms/step - loss: 0.4123 - accuracy: 0.8512"
std::string progress_line(uint32_t step, uint32_t steps, double seconds, double loss,
                          double accuracy) {
  constexpr int kWidth = 30;
  const int done = steps ? int(double(step) / steps * kWidth) : kWidth;
  std::string bar(kWidth, '.');
  for (int i = 0; i < done; ++i) bar[i] = '=';
  if (step < steps && done < kWidth) bar[done] = '>';
  const std::string count = std::to_string(steps);
  char text[256];
  std::snprintf(text, sizeof text, "%*u/%s [%s] - %.0fs %.0fms/step - loss: %.4f - accuracy: %.4f",
                int(count.size()), step, count.c_str(), bar.c_str(), seconds,
                step ? seconds * 1e3 / step : 0.0, loss, accuracy);
  return text;
}

// Checkpoint tensors use PyTorch's nn.Linear layout: weight [out, in].
Checkpoint make_checkpoint(const Trainer& trainer, const TrainConfig& config, uint32_t epochs_done) {
  const MlpShape& shape = trainer.config().shape;
  const std::vector<uint32_t> widths = shape.widths();
  Checkpoint checkpoint;
  auto add_layers = [&](const std::string& prefix, const std::vector<float>& flat) {
    std::size_t at = 0;
    for (uint32_t l = 0; l < shape.layers(); ++l) {
      const uint32_t in = widths[l], out = widths[l + 1];
      Tensor weight{prefix + "layers." + std::to_string(l) + ".weight", {out, in}, {}};
      weight.values.resize(std::size_t(in) * out);
      for (uint32_t i = 0; i < in; ++i)
        for (uint32_t o = 0; o < out; ++o)
          weight.values[std::size_t(o) * in + i] = flat[at + std::size_t(i) * out + o];
      at += std::size_t(in) * out;
      Tensor bias{prefix + "layers." + std::to_string(l) + ".bias", {out},
                  std::vector<float>(flat.begin() + at, flat.begin() + at + out)};
      at += out;
      checkpoint.tensors.push_back(std::move(weight));
      checkpoint.tensors.push_back(std::move(bias));
    }
  };
  add_layers("", trainer.parameters());
  for (const auto& [name, values] : trainer.optimizer().state()) add_layers("optimizer." + name + ".", *values);
  checkpoint.metadata = {{"format", "systole-mlp/1"},
                         {"inputs", std::to_string(shape.inputs)},
                         {"hidden", join(shape.hidden, ",")},
                         {"outputs", std::to_string(shape.outputs)},
                         {"optimizer", config.optimizer},
                         {"optimizer_steps", std::to_string(trainer.optimizer().steps())},
                         {"epochs_done", std::to_string(epochs_done)},
                         {"seed", std::to_string(config.seed)},
                         {"global_batch", std::to_string(config.global_batch)}};
  return checkpoint;
}

// Restores a checkpoint written by make_checkpoint; returns the epochs done.
Result<uint32_t> resume_from(const std::string& path, Trainer& trainer, const TrainConfig& config) {
  auto checkpoint = read_safetensors(path);
  if (!checkpoint.ok()) return checkpoint.status();
  const MlpShape& shape = trainer.config().shape;
  const std::map<std::string, std::string> expected = {
      {"format", "systole-mlp/1"},       {"inputs", std::to_string(shape.inputs)},
      {"hidden", join(shape.hidden, ",")}, {"outputs", std::to_string(shape.outputs)},
      {"optimizer", config.optimizer}};
  for (const auto& [key, value] : expected) {
    const auto it = checkpoint->metadata.find(key);
    const std::string found = it == checkpoint->metadata.end() ? "(missing)" : it->second;
    if (found != value)
      return Status(StatusCode::kInvalidArgument, path + ": " + key + " is " + found +
                                                      " in the checkpoint but " + value + " in the config");
  }
  const std::vector<uint32_t> widths = shape.widths();
  auto gather = [&](const std::string& prefix) -> Result<std::vector<float>> {
    std::vector<float> flat;
    for (uint32_t l = 0; l < shape.layers(); ++l) {
      const uint32_t in = widths[l], out = widths[l + 1];
      const std::string name = prefix + "layers." + std::to_string(l);
      const Tensor* weight = checkpoint->find(name + ".weight");
      const Tensor* bias = checkpoint->find(name + ".bias");
      if (!weight || weight->shape != std::vector<uint64_t>{out, in} || !bias ||
          bias->shape != std::vector<uint64_t>{out})
        return Status(StatusCode::kInvalidArgument,
                      path + ": tensor " + name + ".weight/.bias missing or of the wrong shape");
      for (uint32_t i = 0; i < in; ++i)
        for (uint32_t o = 0; o < out; ++o) flat.push_back(weight->values[std::size_t(o) * in + i]);
      flat.insert(flat.end(), bias->values.begin(), bias->values.end());
    }
    return flat;
  };
  auto parameters = gather("");
  if (!parameters.ok()) return parameters.status();
  std::vector<std::pair<std::string, std::vector<float>>> state;
  for (const auto& entry : trainer.optimizer().state()) {
    auto values = gather("optimizer." + entry.first + ".");
    if (!values.ok()) return values.status();
    state.emplace_back(entry.first, std::move(values).value());
  }
  uint64_t steps = 0;
  uint32_t epochs_done = 0;
  try {
    steps = std::stoull(checkpoint->metadata.at("optimizer_steps"));
    epochs_done = uint32_t(std::stoul(checkpoint->metadata.at("epochs_done")));
  } catch (const std::exception&) {
    return Status(StatusCode::kInvalidArgument, path + ": optimizer_steps or epochs_done metadata is missing");
  }
  SYSTOLE_RETURN_IF_ERROR(trainer.restore(*parameters, state, steps));
  return epochs_done;
}

int train(const TrainConfig& config) {
  // Under mpirun this process is one rank of a job: an error ends the whole
  // job (the other ranks would wait for this one), and only rank 0 logs and
  // writes checkpoints.
  std::unique_ptr<ProcessGroup> group;
  auto fail = [&group](const Status& status) {
    if (group) {
      std::fprintf(stderr, "accel_train: rank %u: %s\n", group->rank(), status.to_string().c_str());
      std::fflush(stderr);
      group->abort(2);
    }
    std::fprintf(stderr, "accel_train: %s\n", status.to_string().c_str());
    return 2;
  };
  if (Status status = validate_train_config(config); !status.ok()) return fail(status);
  if (started_by_mpi_launcher()) {
    MpiOptions mpi;
    mpi.timeout_seconds = config.mpi_timeout_s;
    auto joined = join_mpi_job(mpi);
    if (!joined.ok()) return fail(joined.status());
    group = std::move(joined).value();
  }
  const bool lead = !group || group->rank() == 0;
  auto array = parse_array_shape(config.array);
  if (!array.ok()) return fail(Status(array.status().code(), "array: " + array.status().message()));

  // Data first: a bad data set is reported before any device work.
  auto full_train = load_fashion_mnist(config.data_dir, true);
  if (!full_train.ok()) return fail(full_train.status());
  auto test = load_fashion_mnist(config.data_dir, false);
  if (!test.ok()) return fail(test.status());
  if (config.validation_examples >= full_train->examples)
    return fail(Status(StatusCode::kInvalidArgument,
                       "data.validation_examples: " + std::to_string(config.validation_examples) +
                           " leaves no training examples (the set has " +
                           std::to_string(full_train->examples) + ")"));
  const uint32_t train_examples = full_train->examples - config.validation_examples;
  const Dataset train_set = full_train->slice(0, train_examples);
  const Dataset validation = full_train->slice(train_examples, config.validation_examples);

  // sw_emu creates as many compute units as the devices field selects; any
  // other backend (hw_emu, a board) has its own and is asked for them.
  DeviceOptions options;
  options.array_rows = array->rows;
  options.array_cols = array->cols;
  options.engine = config.engine == "hls" ? EmuEngine::kHls : EmuEngine::kFast;
  options.xclbin = config.xclbin;
  const bool elastic = config.backend == "sw_emu";
  Result<Device> device = Status(StatusCode::kInternal, "device not opened");
  uint32_t available = 0;
  if (!elastic) {
    device = Device::open(config.backend, 0, options);
    if (!device.ok()) return fail(device.status());
    available = device->info().compute_units;
  }
  // The processes of a job on one host share its cores: sw_emu's auto
  // count and its threads per unit take this process's share.
  const uint32_t cores = std::max(1u, std::thread::hardware_concurrency() /
                                          (group ? group->processes_on_this_host() : 1u));
  if (elastic) available = cores;
  auto units = select_units(config.devices, elastic, available);
  if (!units.ok()) return fail(units.status());
  if (elastic) {
    options.compute_units = *std::max_element(units->begin(), units->end()) + 1;
    options.threads_per_unit = std::max<uint32_t>(1, cores / uint32_t(units->size()));
    device = Device::open(config.backend, 0, options);
    if (!device.ok()) return fail(device.status());
  }

  TrainerConfig trainer_config;
  trainer_config.shape.inputs = train_set.features;
  trainer_config.shape.hidden = config.hidden;
  trainer_config.shape.outputs = train_set.classes;
  trainer_config.optimizer.name = config.optimizer;
  trainer_config.optimizer.learning_rate = config.learning_rate;
  trainer_config.optimizer.momentum = config.momentum;
  trainer_config.global_batch = config.global_batch;
  trainer_config.seed = config.seed;
  trainer_config.steps_per_execution = config.steps_per_execution;
  auto trainer = Trainer::create(*device, *units, trainer_config, group.get());
  if (!trainer.ok()) return fail(Status(trainer.status().code(), "train." + trainer.status().message()));

  const std::string checkpoint_path =
      config.checkpoint_dir.empty() ? "" : config.checkpoint_dir + "/checkpoint.safetensors";
  uint32_t first_epoch = 0;
  if (config.resume) {
    auto done = resume_from(checkpoint_path, **trainer, config);
    if (!done.ok()) return fail(done.status());
    first_epoch = *done;
    if (lead) std::printf("resumed from %s after epoch %u\n", checkpoint_path.c_str(), first_epoch);
  }
  if (lead && !checkpoint_path.empty()) {
    std::error_code error;
    std::filesystem::create_directories(config.checkpoint_dir, error);
    if (error) return fail(Status(StatusCode::kUnavailable, "checkpoint.dir: cannot create " + config.checkpoint_dir));
  }

  // Everything below prints on rank 0 only: the ranks train in lockstep
  // and every total is the job's.
  if (!lead && !std::freopen("/dev/null", "w", stdout))
    return fail(Status(StatusCode::kUnavailable, "cannot redirect the output of rank > 0"));
  std::vector<uint32_t> widths = trainer_config.shape.widths();
  std::printf("device: %s, %u replica(s) on units %s\n", device->info().name.c_str(),
              (*trainer)->local_replicas(), join(*units, ",").c_str());
  if (group)
    std::printf("job: %u processes x %u replica(s) = %u replicas in sync (mpi)\n", group->size(),
                (*trainer)->local_replicas(), (*trainer)->replicas());
  std::printf("model: MLP %s, %s lr=%g; global batch %u (%u per replica); %u launches per step\n",
              join(widths, "-").c_str(), config.optimizer.c_str(), double(config.learning_rate),
              config.global_batch, (*trainer)->per_replica_batch(), (*trainer)->launches_per_step());
  std::printf("data: %u training, %u validation, %u test examples from %s\n", train_examples,
              validation.examples, test->examples, config.data_dir.c_str());

  // mpirun gives ranks a pseudo-terminal even when its own output is a file.
  const bool interactive = !group && isatty(STDOUT_FILENO);
  double training_seconds = 0;
  uint64_t trained_examples = 0;
  for (uint32_t epoch = first_epoch; epoch < config.epochs; ++epoch) {
    std::printf("Epoch %u/%u\n", epoch + 1, config.epochs);
    std::fflush(stdout);
    BatchStream batches(train_set, config.global_batch, config.seed, epoch, /*shuffle=*/true);
    const auto start = Clock::now();
    double loss = 0;
    uint64_t correct = 0, seen = 0;
    Batch batch;
    uint32_t step = 0;
    while (batches.next(batch)) {
      auto result = (*trainer)->step(batch);
      if (!result.ok()) return fail(result.status());
      loss += result->loss_sum;
      correct += result->correct;
      seen += result->examples;
      ++step;
      if (interactive) {
        const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
        std::printf("\r%s", progress_line(step, batches.batches(), seconds, loss / seen,
                                          double(correct) / seen).c_str());
        std::fflush(stdout);
      }
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    training_seconds += seconds;
    trained_examples += seen;
    auto validated = (*trainer)->evaluate(validation);
    if (!validated.ok()) return fail(validated.status());
    std::printf("%s%s - val_loss: %.4f - val_accuracy: %.4f\n", interactive ? "\r" : "",
                progress_line(step, batches.batches(), seconds, loss / std::max<uint64_t>(seen, 1),
                              double(correct) / std::max<uint64_t>(seen, 1)).c_str(),
                validated->loss_sum / validated->examples,
                double(validated->correct) / validated->examples);
    auto identical = (*trainer)->replicas_identical();
    if (!identical.ok()) return fail(identical.status());
    if (!*identical)
      return fail(Status(StatusCode::kInternal, "replicas diverged (a bug: they must hold the same bits)"));
    if (lead && !checkpoint_path.empty()) {
      const Status saved = write_safetensors(checkpoint_path, make_checkpoint(**trainer, config, epoch + 1));
      if (!saved.ok()) return fail(saved);
    }
  }
  auto tested = (*trainer)->evaluate(*test);
  if (!tested.ok()) return fail(tested.status());
  std::printf("test_loss: %.4f - test_accuracy: %.4f\n", tested->loss_sum / tested->examples,
              double(tested->correct) / tested->examples);
  if (training_seconds > 0)
    std::printf("throughput: %llu examples in %.1f s of training steps, %.0f samples/s\n",
                (unsigned long long)trained_examples, training_seconds,
                double(trained_examples) / training_seconds);
  if (!checkpoint_path.empty()) std::printf("checkpoint: %s\n", checkpoint_path.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Train an MLP on Fashion-MNIST on a Systole device."};
  std::string config_path;
  app.add_option("--config", config_path, "YAML configuration (see configs/)");
  TrainConfig config;
  // Overrides: each names the config field it sets; a repeated one takes
  // its last value, so appending to a command line overrides it.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  std::string hidden;
  auto* o_backend = app.add_option("--backend", config.backend, "backend");
  auto* o_devices = app.add_option("--devices", config.devices, "devices: auto, a count, or [0,2]");
  auto* o_array = app.add_option("--array", config.array, "array: ROWSxCOLS (emulated devices)");
  auto* o_engine = app.add_option("--engine", config.engine, "engine: fast or hls (sw_emu)");
  auto* o_xclbin = app.add_option("--xclbin", config.xclbin, "xclbin: the bitstream (xrt)");
  auto* o_hidden = app.add_option("--hidden", hidden, "model.hidden, e.g. 256,128");
  auto* o_data = app.add_option("--data-dir", config.data_dir, "data.dir");
  auto* o_validation = app.add_option("--validation-examples", config.validation_examples, "data.validation_examples");
  auto* o_epochs = app.add_option("--epochs", config.epochs, "train.epochs");
  auto* o_batch = app.add_option("--global-batch", config.global_batch, "train.global_batch");
  auto* o_optimizer = app.add_option("--optimizer", config.optimizer, "train.optimizer: adam or sgd");
  auto* o_lr = app.add_option("--learning-rate", config.learning_rate, "train.learning_rate");
  auto* o_momentum = app.add_option("--momentum", config.momentum, "train.momentum");
  auto* o_seed = app.add_option("--seed", config.seed, "train.seed");
  auto* o_spe = app.add_option("--steps-per-execution", config.steps_per_execution,
                               "train.steps_per_execution: evaluation batches per command list");
  auto* o_checkpoint = app.add_option("--checkpoint-dir", config.checkpoint_dir, "checkpoint.dir");
  auto* o_resume = app.add_flag("--resume", config.resume, "checkpoint.resume");
  auto* o_mpi_timeout = app.add_option("--mpi-timeout", config.mpi_timeout_s,
                                       "mpi.timeout_s: longest wait for another rank (mpirun)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  // The file first, then the command line on top of it.
  TrainConfig merged;
  if (!config_path.empty()) {
    const Status status = load_train_config(config_path, merged);
    if (!status.ok()) {
      std::fprintf(stderr, "accel_train: %s\n", status.to_string().c_str());
      return 2;
    }
  }
  auto given = [](CLI::Option* option) { return option->count() > 0; };
  if (given(o_backend)) merged.backend = config.backend;
  if (given(o_devices)) merged.devices = config.devices;
  if (given(o_array)) merged.array = config.array;
  if (given(o_engine)) merged.engine = config.engine;
  if (given(o_xclbin)) merged.xclbin = config.xclbin;
  if (given(o_data)) merged.data_dir = config.data_dir;
  if (given(o_validation)) merged.validation_examples = config.validation_examples;
  if (given(o_epochs)) merged.epochs = config.epochs;
  if (given(o_batch)) merged.global_batch = config.global_batch;
  if (given(o_optimizer)) merged.optimizer = config.optimizer;
  if (given(o_lr)) merged.learning_rate = config.learning_rate;
  if (given(o_momentum)) merged.momentum = config.momentum;
  if (given(o_seed)) merged.seed = config.seed;
  if (given(o_spe)) merged.steps_per_execution = config.steps_per_execution;
  if (given(o_checkpoint)) merged.checkpoint_dir = config.checkpoint_dir;
  if (given(o_resume)) merged.resume = config.resume;
  if (given(o_mpi_timeout)) merged.mpi_timeout_s = config.mpi_timeout_s;
  if (given(o_hidden)) {
    merged.hidden.clear();
    std::stringstream text(hidden);
    std::string item;
    while (std::getline(text, item, ',')) {
      try {
        merged.hidden.push_back(uint32_t(std::stoul(item)));
      } catch (const std::exception&) {
        std::fprintf(stderr, "accel_train: --hidden: '%s' is not a layer width\n", item.c_str());
        return 2;
      }
    }
  }
  return train(merged);
}
