// SPDX-License-Identifier: Apache-2.0
// accel_train: trains a Sequential model (dense, convolutional, batch
// normalised...) on Fashion-MNIST or any IDX data set on a Systole device,
// one replica per compute unit, with Keras-style progress,
// validation each epoch, the test accuracy at the end, and safetensors
// checkpoints that a PyTorch user can open and training can resume from.
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "callbacks.h"
#include "guarded_main.h"
#include "npy_matrix.h"
#include "ranking_report.h"
#include "run_checkpoint.h"
#include "run_data.h"
#include "systole/checkpoint.h"
#include "systole/dataset.h"
#include "systole/mpi_process_group.h"
#include "systole/output_file.h"
#include "systole/record_pipeline.h"
#include "systole/tfrecord.h"
#include "systole/trace.h"
#include "systole/trainer.h"
#include "train_config.h"

#include <xtensor/xadapt.hpp>
#include <xtensor/xnpy.hpp>

namespace {

using namespace systole;
using Clock = std::chrono::steady_clock;

// "  7/469 [>.............................] - 1s 15ms/step - loss: 0.4123 - accuracy: 0.8512"
std::string progress_line(uint32_t step, uint32_t steps, double seconds, double loss, double accuracy) {
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

// perf: what the training steps would take on the board.
void print_projection(const Projection& p, uint64_t steps, uint64_t examples) {
  std::printf("projection: %s (modelled, not measured)\n", p.board.c_str());
  std::printf(
      "  %.3f ms per step, %.0f samples/s; per step and unit %.3f ms in launches (array utilization "
      "%.1f%%) and %.3f ms on the host link; bound by %s (%llu of %llu launches compute-bound); the "
      "host's own work (loss, all-reduce, optimizer) is not included\n",
      p.seconds / steps * 1e3, examples / p.seconds,
      p.launch_seconds / steps / std::max(1u, p.compute_units) * 1e3, 100.0 * p.utilization(),
      p.link_seconds / steps / std::max(1u, p.compute_units) * 1e3, p.bound(),
      (unsigned long long)p.compute_bound, (unsigned long long)p.launches);
}

// A device and the compute units `devices` selects on it. The emulators
// and perf create as many units as selected; a board has its own and is
// asked for them.
struct OpenedDevice {
  Device device;
  std::vector<uint32_t> units;
};

Result<OpenedDevice> open_device(const TrainConfig& config, spec::ArrayShape array, ProcessGroup* group) {
  DeviceOptions options;
  options.array_rows = array.rows;
  options.array_cols = array.cols;
  options.engine = config.engine == "hls" ? EmuEngine::kHls : EmuEngine::kFast;
  options.xclbin = config.xclbin;
  options.perf = {config.board, config.clock_mhz, config.pcie_gen, config.pcie_lanes};
  uint32_t index = 0;
  SYSTOLE_RETURN_IF_ERROR(parse_device(config.device, &index, &options));
  // sw_emu and hw_emu make as many units as are selected (auto: one per
  // core); perf models as many as are selected on its board (auto: one).
  const bool elastic = config.backend == "sw_emu" || config.backend == "hw_emu" || config.backend == "perf";
  OpenedDevice opened;
  uint32_t available = 0;
  if (!elastic) {
    auto device = Device::open(config.backend, index, options);
    if (!device.ok()) return device.status();
    opened.device = *device;
    available = device->info().compute_units;
  }
  // The processes of a job on one host share its cores: sw_emu's auto
  // count and its threads per unit take this process's share.
  const uint32_t cores =
      std::max(1u, std::thread::hardware_concurrency() / (group ? group->processes_on_this_host() : 1u));
  if (elastic) available = config.backend == "perf" ? 1 : cores;
  auto units = select_units(config.devices, elastic, available);
  if (!units.ok()) return units.status();
  opened.units = *units;
  if (elastic) {
    options.compute_units = *std::max_element(units->begin(), units->end()) + 1;
    options.threads_per_unit = std::max<uint32_t>(1, cores / uint32_t(units->size()));
    auto device = Device::open(config.backend, index, options);
    if (!device.ok()) return device.status();
    opened.device = *device;
  }
  return opened;
}

// Under mpirun: every rank's job_settings() against rank 0's, before any
// data or device work. Each setting travels as its text's FarmHash
// Fingerprint64 (two exact 32-bit halves in all_gather's doubles); a
// difference is
// an error on every rank naming the setting, this rank's value and the
// ranks that differ from rank 0.
Status check_ranks_agree(ProcessGroup& group, const TrainConfig& config) {
  const auto settings = job_settings(config);
  std::vector<double> local;
  for (const auto& [name, value] : settings) {
    const uint64_t hash = fingerprint64(value);
    local.push_back(double(hash >> 32));
    local.push_back(double(hash & 0xFFFFFFFFu));
  }
  auto all = group.all_gather(local);
  if (!all.ok()) return all.status();
  const std::size_t width = local.size();
  for (std::size_t i = 0; i < settings.size(); ++i) {
    std::string differing;
    for (uint32_t rank = 1; rank < group.size(); ++rank)
      if ((*all)[rank * width + 2 * i] != (*all)[2 * i] ||
          (*all)[rank * width + 2 * i + 1] != (*all)[2 * i + 1])
        differing += (differing.empty() ? "" : ", ") + std::to_string(rank);
    if (!differing.empty())
      return Status(StatusCode::kInvalidArgument,
                    "the processes of the job were started with different settings: " + settings[i].first +
                        " differs from rank 0's on rank(s) " + differing + " (this rank, " +
                        std::to_string(group.rank()) + ", has '" + settings[i].second + "')");
  }
  return ok_status();
}

// Ctrl-C (SIGINT) and SIGTERM stop training after the step in progress,
// keeping the last checkpoint, as Keras users expect of Ctrl-C; a second
// signal ends the process at once (SA_RESETHAND: the default action).
// Interrupted system calls resume (SA_RESTART).
std::atomic<int> stop_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "set from a signal handler");

extern "C" void on_stop_signal(int signal) { stop_signal.store(signal); }

void install_stop_signals() {
  struct sigaction action = {};
  action.sa_handler = on_stop_signal;
  action.sa_flags = SA_RESETHAND | SA_RESTART;
  sigemptyset(&action.sa_mask);
  for (int signal : {SIGINT, SIGTERM}) {
    struct sigaction current = {};
    // A signal ignored from the start (nohup, a shell's background job)
    // stays ignored.
    if (sigaction(signal, nullptr, &current) == 0 && current.sa_handler == SIG_IGN) continue;
    sigaction(signal, &action, nullptr);
  }
}

// The signal that stops the run after this step, or 0. Under mpirun every
// rank must stop after the same step (a rank that went on would wait for the
// others in its next all-reduce), so the ranks agree on it.
Result<int> agreed_stop_signal(ProcessGroup* group) {
  const int local = stop_signal.load();
  if (!group) return local;
  auto all = group->all_gather({double(local)});
  if (!all.ok()) return all.status();
  for (double signal : *all)
    if (signal != 0) return int(signal);
  return 0;
}

int train(const TrainConfig& config) {
  install_stop_signals();
  // Under mpirun this process is one rank of a job: an error ends the whole
  // job (the other ranks would wait for this one), and only rank 0 logs and
  // writes checkpoints.
  std::unique_ptr<ProcessGroup> group;
  // The trace, when asked for: written at the end, or when the run fails.
  std::unique_ptr<Trace> trace;
  auto write_trace = [&]() {
    if (!trace) return;
    Trace::install(nullptr);
    const Status written = trace->write(config.trace_file);
    if (written.ok())
      std::printf("trace: %s (%zu events; open it in ui.perfetto.dev or chrome://tracing)\n",
                  config.trace_file.c_str(), trace->events());
    else
      std::fprintf(stderr, "accel_train: trace: %s\n", written.to_string().c_str());
    trace.reset();
  };
  auto fail = [&group, &write_trace](const Status& status) {
    write_trace();
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
    if (Status agreed = check_ranks_agree(*group, config); !agreed.ok()) return fail(agreed);
  }
  const bool lead = !group || group->rank() == 0;
  if (lead && !config.trace_file.empty()) {
    trace = std::make_unique<Trace>();
    Trace::install(trace.get());
  }
  auto array = parse_array_shape(config.array);
  if (!array.ok()) return fail(Status(array.status().code(), "array: " + array.status().message()));

  // Data first: a bad data set is reported before any device work.
  auto loaded = load_run_data(config, group ? group->rank() : 0, group ? group->size() : 1);
  if (!loaded.ok()) return fail(loaded.status());
  RunData& data = *loaded;

  auto opened = open_device(config, *array, group.get());
  if (!opened.ok()) return fail(opened.status());
  Device* device = &opened->device;
  const std::vector<uint32_t>* units = &opened->units;

  auto spec = model_spec(config, data.shape_of);
  if (!spec.ok()) return fail(spec.status());
  TrainerConfig trainer_config;
  trainer_config.model = *spec;
  trainer_config.launch_timeout = std::chrono::milliseconds(int64_t(config.launch_timeout_s * 1000));
  trainer_config.optimizer.name = config.optimizer;
  trainer_config.optimizer.learning_rate = config.learning_rate;
  LearningRateSchedule& schedule = trainer_config.optimizer.schedule;
  schedule.kind = LearningRateSchedule::parse(config.schedule).value();  // validated
  schedule.decay_steps = config.decay_steps;
  schedule.decay_rate = config.decay_rate;
  schedule.warmup_steps = config.warmup_steps;
  if (schedule.kind == LearningRateSchedule::Kind::kCosine && schedule.decay_steps == 0) {
    // Over the rest of the run after the warmup: the steps of every epoch.
    const uint64_t batches = data.batches_per_epoch;
    const uint64_t steps =
        uint64_t(config.epochs) *
        (config.steps_per_epoch ? std::min<uint64_t>(config.steps_per_epoch, batches) : batches);
    schedule.decay_steps =
        std::max<uint64_t>(1, steps > schedule.warmup_steps ? steps - schedule.warmup_steps : 1);
  }
  trainer_config.optimizer.momentum = config.momentum;
  trainer_config.optimizer.table_learning_rate = config.embedding_learning_rate;
  trainer_config.optimizer.table_initial_accumulator = config.embedding_initial_accumulator;
  trainer_config.global_batch = config.global_batch;
  trainer_config.seed = config.seed;
  trainer_config.steps_per_execution = config.steps_per_execution;
  auto trainer = Trainer::create(*device, *units, trainer_config, group.get());
  if (!trainer.ok()) return fail(trainer.status());

  const std::string checkpoint_path =
      config.checkpoint_dir.empty() ? "" : config.checkpoint_dir + "/checkpoint.safetensors";
  // The directory is this run's alone from here on: a second run on it
  // would interleave its checkpoints with ours. (Resuming from a directory
  // that does not exist fails below, without creating it.)
  std::optional<DirectoryLock> checkpoint_lock;
  std::error_code missing;
  if (lead && !checkpoint_path.empty() &&
      !(config.resume && !std::filesystem::exists(config.checkpoint_dir, missing))) {
    std::error_code error;
    std::filesystem::create_directories(config.checkpoint_dir, error);
    if (error)
      return fail(Status(StatusCode::kUnavailable, "checkpoint.dir: cannot create " + config.checkpoint_dir));
    char host[256] = "?";
    gethostname(host, sizeof host - 1);
    auto lock = DirectoryLock::acquire(config.checkpoint_dir,
                                       "accel_train pid " + std::to_string(getpid()) + " on host " + host);
    if (!lock.ok()) return fail(lock.status());
    checkpoint_lock.emplace(std::move(lock).value());
    for (const std::string& name : checkpoint_lock->removed_temporaries())
      std::printf("removed %s/%s, a partial write of a run that was killed\n", config.checkpoint_dir.c_str(),
                  name.c_str());
  }
  uint32_t first_epoch = 0;
  if (config.resume) {
    auto done = resume_from(checkpoint_path, **trainer, config);
    if (!done.ok()) return fail(done.status());
    first_epoch = *done;
    if (lead) std::printf("resumed from %s after epoch %u\n", checkpoint_path.c_str(), first_epoch);
    if (first_epoch >= config.epochs) {
      if (lead)
        std::printf(
            "the run is already finished (%u of %u epochs done): nothing to train; raise --epochs "
            "to go on, or run accel_train evaluate\n",
            first_epoch, config.epochs);
      return 0;
    }
  }

  // Everything below prints on rank 0 only: the ranks train in lockstep
  // and every total is the job's.
  if (!lead && !std::freopen("/dev/null", "w", stdout))
    return fail(Status(StatusCode::kUnavailable, "cannot redirect the output of rank > 0"));
  std::printf("device: %s, %u replica(s) on units %s\n", device->info().name.c_str(),
              (*trainer)->local_replicas(), join(*units, ",").c_str());
  if (group)
    std::printf("job: %u processes x %u replica(s) = %u replicas in sync (mpi)\n", group->size(),
                (*trainer)->local_replicas(), (*trainer)->replicas());
  std::printf(
      "model: input %s, %u classes, %zu trainable parameters%s; %s lr=%g (%s); global batch %u (%u per "
      "replica)\n%s",
      shape_text(spec->input_shape).c_str(), spec->classes, (*trainer)->parameters().trainable().size(),
      (*trainer)->parameters().tables().empty()
          ? ""
          : (" + " + std::to_string((*trainer)->parameters().tables().size()) +
             " in embedding tables (adagrad lr=" + std::to_string(config.embedding_learning_rate) + ")")
                .c_str(),
      config.optimizer.c_str(), double(config.learning_rate), config.schedule.c_str(), config.global_batch,
      (*trainer)->per_replica_batch(), (*trainer)->model().summary().c_str());
  std::printf("torch: %s\n", (*trainer)->model().torch_code().c_str());
  std::printf("data: %s\n", data.description.c_str());

  // The callbacks, in the order they run. Those that decide run on every
  // rank (they see the job's totals, so the ranks agree); those that write
  // files, on rank 0.
  std::vector<std::unique_ptr<Callback>> callbacks;
  if (config.terminate_on_nan) callbacks.push_back(std::make_unique<TerminateOnNaN>());
  const bool validation = data.validation.examples > 0;
  if (lead && !config.csv_log.empty()) {
    auto logger = CsvLogger::create(config, validation);
    if (!logger.ok()) return fail(logger.status());
    callbacks.push_back(std::move(logger).value());
  }
  if (lead && !config.tensorboard_dir.empty()) {
    auto board = TensorBoard::create(config, validation);
    if (!board.ok()) return fail(board.status());
    callbacks.push_back(std::move(board).value());
  }
  ModelCheckpoint* checkpoints = nullptr;
  if (lead && !checkpoint_path.empty()) {
    auto save = [&, trainer = trainer->get()](uint32_t epochs_done) {
      TraceScope span("checkpoint", "host", Trace::kHostTrack);
      Status saved = write_safetensors(checkpoint_path, make_checkpoint(*trainer, config, epochs_done));
      if (saved.ok())
        saved = write_safetensors(config.checkpoint_dir + "/model.safetensors", make_model_file(*trainer));
      return saved;
    };
    auto callback = std::make_unique<ModelCheckpoint>(config, save);
    checkpoints = callback.get();
    callbacks.push_back(std::move(callback));
  }
  if (config.early_stopping) callbacks.push_back(std::make_unique<EarlyStopping>(config, **trainer));
  // A run that ends early says which checkpoint is still the good one.
  auto checkpoint_note = [&]() -> std::string {
    const uint32_t last =
        checkpoints && checkpoints->saved_epochs() ? checkpoints->saved_epochs() : first_epoch;
    if (checkpoint_path.empty()) return "";
    return last ? "; the last checkpoint, " + checkpoint_path + " after epoch " + std::to_string(last) +
                      ", is intact"
                : "; no checkpoint was written";
  };
  auto failed_in_epoch = [&](const Status& status) {
    return fail(Status(status.code(), status.message() + checkpoint_note()));
  };
  auto interrupted = [&](int signal, uint32_t epoch, uint32_t step, uint32_t steps) {
    write_trace();
    if (lead)
      std::fprintf(stderr, "accel_train: %s: stopped after batch %u of %u in epoch %u (step %llu)%s%s\n",
                   signal == SIGINT ? "interrupted (SIGINT)" : "terminated (SIGTERM)", step, steps, epoch + 1,
                   (unsigned long long)(*trainer)->optimizer().steps(), checkpoint_note().c_str(),
                   checkpoint_path.empty() ? "" : "; --resume continues from it");
    return 128 + signal;
  };

  // mpirun gives ranks a pseudo-terminal even when its own output is a file.
  const bool interactive = !group && isatty(STDOUT_FILENO);
  double training_seconds = 0, launches_per_step = 0, input_wait_seconds = 0;
  uint64_t trained_examples = 0, trained_steps = 0;
  // perf: the board's projection of the training steps (not of validation).
  Result<Projection> projected = device->projection();
  if (projected.ok()) projected = projected->since(*projected);
  bool stop = false;
  for (uint32_t epoch = first_epoch; epoch < config.epochs && !stop; ++epoch) {
    std::printf("Epoch %u/%u\n", epoch + 1, config.epochs);
    std::fflush(stdout);
    std::unique_ptr<BatchStream> stream;
    if (data.pipeline)
      data.pipeline->start_epoch(epoch);
    else
      stream = std::make_unique<BatchStream>(data.train_set, config.global_batch, config.seed, epoch,
                                             /*shuffle=*/true);
    const auto start = Clock::now();
    Result<Projection> projected_before = device->projection();
    double loss = 0;
    uint64_t correct = 0, seen = 0;
    Batch batch;
    uint32_t step = 0;
    const uint64_t launches_before = (*trainer)->launches();
    const uint32_t steps =
        uint32_t(config.steps_per_epoch ? std::min<uint64_t>(config.steps_per_epoch, data.batches_per_epoch)
                                        : data.batches_per_epoch);
    while (step < steps) {
      const auto asked = Clock::now();
      Result<bool> more = data.pipeline ? data.pipeline->next(batch) : Result<bool>(stream->next(batch));
      const auto got = Clock::now();
      input_wait_seconds += std::chrono::duration<double>(got - asked).count();
      if (trace) trace->span("data wait", "host", Trace::kHostTrack, asked, got);
      if (!more.ok()) return fail(more.status());
      if (!*more)  // only when skip_corrupt dropped records
        return fail(
            Status(StatusCode::kDataLoss,
                   "data.train: the epoch ended after " + std::to_string(step) + " of " +
                       std::to_string(steps) + " batches: " + std::to_string(data.pipeline->skipped()) +
                       " corrupt record(s) skipped, the first: " + data.pipeline->first_skip_reason()));
      auto result = data.pipeline ? (*trainer)->step_local(batch) : (*trainer)->step(batch);
      if (trace)
        trace->span("step", "host", Trace::kHostTrack, got, Clock::now(),
                    {{"step", double((*trainer)->optimizer().steps())}, {"examples", double(batch.size)}});
      if (!result.ok()) return fail(result.status());
      loss += result->loss_sum;
      correct += result->correct;
      seen += result->examples;
      ++step;
      BatchLogs batch_logs;
      batch_logs.step = (*trainer)->optimizer().steps();
      batch_logs.epoch = epoch;
      batch_logs.batch = step;
      batch_logs.loss = loss / seen;
      batch_logs.accuracy = double(correct) / seen;
      for (const auto& callback : callbacks)
        if (Status status = callback->on_batch_end(batch_logs); !status.ok()) return failed_in_epoch(status);
      auto signal = agreed_stop_signal(group.get());
      if (!signal.ok()) return fail(signal.status());
      if (*signal) return interrupted(*signal, epoch, step, steps);
      const bool log_line = !interactive && config.log_every && step % config.log_every == 0 && step < steps;
      if (interactive || log_line) {
        const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
        std::printf(interactive ? "\r%s" : "%s\n",
                    progress_line(step, steps, seconds, batch_logs.loss, batch_logs.accuracy).c_str());
        std::fflush(stdout);
      }
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (step) launches_per_step = double((*trainer)->launches() - launches_before) / step;
    training_seconds += seconds;
    trained_examples += seen;
    trained_steps += step;
    if (projected.ok()) *projected += device->projection()->since(*projected_before);
    EpochLogs logs;
    logs.epoch = epoch;
    logs.loss = loss / std::max<uint64_t>(seen, 1);
    logs.accuracy = double(correct) / std::max<uint64_t>(seen, 1);
    logs.learning_rate = (*trainer)->optimizer().learning_rate();
    const std::string trained = progress_line(step, steps, seconds, logs.loss, logs.accuracy);
    if (validation) {
      TraceScope span("validation", "host", Trace::kHostTrack);
      auto validated = (*trainer)->evaluate(data.validation);
      if (!validated.ok()) return fail(validated.status());
      logs.val_loss = validated->loss_sum / validated->examples;
      logs.val_accuracy = double(validated->correct) / validated->examples;
      std::printf("%s%s - val_loss: %.4f - val_accuracy: %.4f\n", interactive ? "\r" : "", trained.c_str(),
                  *logs.val_loss, *logs.val_accuracy);
    } else {
      std::printf("%s%s\n", interactive ? "\r" : "", trained.c_str());
    }
    if (data.pipeline && data.pipeline->skipped() > 0)
      std::printf("warning: %llu corrupt record(s) skipped (data.skip_corrupt), the first: %s\n",
                  (unsigned long long)data.pipeline->skipped(), data.pipeline->first_skip_reason().c_str());
    auto identical = (*trainer)->replicas_identical();
    if (!identical.ok()) return fail(identical.status());
    if (!*identical)
      return fail(Status(StatusCode::kInternal, "replicas diverged (a bug: they must hold the same bits)"));
    for (const auto& callback : callbacks)
      if (Status status = callback->on_epoch_end(logs, stop); !status.ok()) return failed_in_epoch(status);
  }
  if (data.test.examples > 0) {
    auto tested = (*trainer)->evaluate(data.test);
    if (!tested.ok()) return fail(tested.status());
    std::printf("test_loss: %.4f - test_accuracy: %.4f\n", tested->loss_sum / tested->examples,
                double(tested->correct) / tested->examples);
    if (config.ranking && lead)
      if (Status ranked = report_ranking(**trainer, config, data.test); !ranked.ok()) return fail(ranked);
  }
  if (training_seconds > 0)
    std::printf(
        "throughput: %llu examples in %.1f s of training steps, %.0f samples/s (%.0f launches per step and "
        "replica; %.1f%% of the time waiting for input)\n",
        (unsigned long long)trained_examples, training_seconds, double(trained_examples) / training_seconds,
        launches_per_step, 100.0 * input_wait_seconds / training_seconds);
  if (projected.ok() && trained_steps > 0) print_projection(*projected, trained_steps, trained_examples);
  if (!checkpoint_path.empty()) std::printf("checkpoint: %s\n", checkpoint_path.c_str());
  write_trace();
  return 0;
}

enum class Mode { kTrain, kEvaluate, kPredict };

struct InferOptions {
  std::string checkpoint, input, output;
};

// Reads a float32 .npy of examples; the first dimension counts them, the
// rest must hold `features` values.
Result<std::vector<float>> read_examples(const std::string& path, std::size_t features, uint32_t& count) {
  auto array = tools::read_npy(path);
  if (!array.ok()) return array.status();
  if (array->shape[0] > (1u << 30) || array->values.size() != array->shape[0] * features)
    return Status(StatusCode::kInvalidArgument, path + ": expected N examples of " +
                                                    std::to_string(features) + " values each, got " +
                                                    std::to_string(array->values.size()) + " values in " +
                                                    std::to_string(array->shape[0]) + " rows");
  count = uint32_t(array->shape[0]);
  return std::move(array->values);
}

// evaluate and predict: the model and its weights from a checkpoint.
int infer(Mode mode, const TrainConfig& config, const InferOptions& options) {
  auto fail = [](const Status& status) {
    std::fprintf(stderr, "accel_train: %s\n", status.to_string().c_str());
    return 2;
  };
  if (Status status = validate_train_config(config); !status.ok()) return fail(status);
  if (started_by_mpi_launcher())
    return fail(
        Status(StatusCode::kInvalidArgument, "evaluate and predict run in one process, not under mpirun"));
  if (options.checkpoint.empty()) return fail(Status(StatusCode::kInvalidArgument, "--checkpoint: required"));
  if (mode == Mode::kPredict && (options.input.empty() || options.output.empty()))
    return fail(Status(StatusCode::kInvalidArgument, "predict needs --input X.npy and --output Y.npy"));
  auto checkpoint = read_safetensors(options.checkpoint);
  if (!checkpoint.ok()) return fail(checkpoint.status());
  const auto description = checkpoint->metadata.find("model");
  if (description == checkpoint->metadata.end())
    return fail(Status(
        StatusCode::kInvalidArgument,
        options.checkpoint + ": no model description (written before format " + kCheckpointFormat + ")"));
  auto spec = ModelSpec::from_json(description->second);
  if (!spec.ok())
    return fail(Status(spec.status().code(), options.checkpoint + ": " + spec.status().message()));
  auto array = parse_array_shape(config.array);
  if (!array.ok()) return fail(Status(array.status().code(), "array: " + array.status().message()));
  auto opened = open_device(config, *array, nullptr);
  if (!opened.ok()) return fail(opened.status());
  TrainerConfig trainer_config;
  trainer_config.model = *spec;
  trainer_config.global_batch = config.global_batch;
  trainer_config.steps_per_execution = config.steps_per_execution;
  trainer_config.launch_timeout = std::chrono::milliseconds(int64_t(config.launch_timeout_s * 1000));
  auto trainer = Trainer::create(opened->device, opened->units, trainer_config);
  if (!trainer.ok()) return fail(trainer.status());
  ModelValues values;
  Status loaded = read_model_tensors(*checkpoint, options.checkpoint, (*trainer)->parameters(), {}, values);
  if (loaded.ok()) loaded = (*trainer)->restore(values, 0);
  if (!loaded.ok()) return fail(loaded);

  if (mode == Mode::kEvaluate) {
    auto test = load_test_set(config, spec->classes);
    if (!test.ok()) return fail(test.status());
    if (test->features != shape_elements(spec->input_shape))
      return fail(Status(StatusCode::kInvalidArgument, "the test examples are " + shape_text(test->shape) +
                                                           ", the model takes " +
                                                           shape_text(spec->input_shape)));
    auto tested = (*trainer)->evaluate(*test);
    if (!tested.ok()) return fail(tested.status());
    std::printf("test_loss: %.4f - test_accuracy: %.4f\n", tested->loss_sum / tested->examples,
                double(tested->correct) / tested->examples);
    return 0;
  }
  uint32_t count = 0;
  auto inputs = read_examples(options.input, shape_elements(spec->input_shape), count);
  if (!inputs.ok()) return fail(inputs.status());
  auto logits = (*trainer)->predict(inputs->data(), count);
  if (!logits.ok()) return fail(logits.status());
  // Written beside the output and renamed over it: no half-written file.
  const std::string npy = xt::dump_npy(xt::adapt(*logits, std::vector<std::size_t>{count, spec->classes}));
  auto output = OutputFile::create(options.output);
  if (!output.ok()) return fail(output.status());
  Status written = output->write(npy.data(), npy.size());
  if (written.ok()) written = output->commit();
  if (!written.ok()) return fail(written);
  std::printf("predict: %u examples -> %s (%u logits each)\n", count, options.output.c_str(), spec->classes);
  return 0;
}

}  // namespace

int tool_main(int argc, char** argv) {
  CLI::App app{
      "Train a model on Fashion-MNIST (or any IDX data set) on a Systole device.\n"
      "  accel_train [train] --config F [overrides]\n"
      "  accel_train evaluate --checkpoint F [--config F] [overrides]\n"
      "  accel_train predict --checkpoint F --input X.npy --output Y.npy"};
  // The mode is the first argument, if it names one.
  Mode mode = Mode::kTrain;
  if (argc > 1 && (std::string(argv[1]) == "train" || std::string(argv[1]) == "evaluate" ||
                   std::string(argv[1]) == "predict")) {
    const std::string word = argv[1];
    mode = word == "evaluate" ? Mode::kEvaluate : word == "predict" ? Mode::kPredict : Mode::kTrain;
    argv[1] = argv[0];
    ++argv;
    --argc;
  }
  std::string config_path;
  InferOptions infer_options;
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
        std::fprintf(stderr, "accel_train: --hidden: '%s' is not a layer width (1 to 16777216)\n",
                     item.c_str());
        return 2;
      }
      merged.hidden.push_back(uint32_t(std::stoul(item)));
    }
  }
  if (mode != Mode::kTrain) return infer(mode, merged, infer_options);
  if (!infer_options.checkpoint.empty() || !infer_options.input.empty() || !infer_options.output.empty()) {
    std::fprintf(stderr, "accel_train: --checkpoint, --input and --output belong to evaluate and predict\n");
    return 2;
  }
  return train(merged);
}

int main(int argc, char** argv) { return systole::tools::guarded_main("accel_train", tool_main, argc, argv); }
