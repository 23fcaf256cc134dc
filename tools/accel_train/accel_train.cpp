// SPDX-License-Identifier: Apache-2.0
// accel_train: trains a model (dense, convolutional, batch normalised...)
// on Fashion-MNIST, any IDX data set or TFRecord files on a Systole device,
// one replica per compute unit. The training itself is the library's fit()
// and callbacks; this file wires a config to them: job, data, device,
// trainer, callbacks, fit, report.
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <memory>

#include "command_line.h"
#include "guarded_main.h"
#include "infer.h"
#include "run_job.h"
#include "run_report.h"
#include "systole/callbacks.h"
#include "systole/fit.h"
#include "systole/mpi_process_group.h"
#include "systole/output_file.h"
#include "systole/run/callbacks.h"
#include "systole/run/config.h"
#include "systole/run/run.h"
#include "systole/trace.h"
#include "systole/training_checkpoint.h"

namespace {

using namespace systole;

int train(const RunConfig& config) {
  install_stop_signals();
  // Under mpirun this process is one rank of a job: an error ends the whole
  // job (the other ranks would wait for this one), and only rank 0 logs and
  // writes files.
  std::unique_ptr<ProcessGroup> group;
  std::unique_ptr<Trace> trace;  // written at the end, or when the run fails
  // Returns false when the trace could not be written (the run then exits
  // 2: an output asked for is not there).
  auto write_trace = [&]() {
    if (!trace) return true;
    Trace::install(nullptr);
    const Status written = trace->write(config.trace_file);
    if (written.ok())
      std::printf("trace: %s (%zu events; open it in ui.perfetto.dev or chrome://tracing)\n",
                  config.trace_file.c_str(), trace->events());
    else
      std::fprintf(stderr, "accel_train: trace: %s\n", written.to_string().c_str());
    trace.reset();
    return written.ok();
  };
  auto fail = [&](const Status& status) {
    write_trace();
    if (group) {
      std::fprintf(stderr, "accel_train: rank %u: %s\n", group->rank(), status.to_string().c_str());
      std::fflush(stderr);
      group->abort(2);
    }
    std::fprintf(stderr, "accel_train: %s\n", status.to_string().c_str());
    return 2;
  };
  if (Status status = validate_run_config(config); !status.ok()) return fail(status);
  if (started_by_mpi_launcher()) {
    auto joined = join_mpi_job(MpiOptions{config.mpi_timeout_s});
    if (!joined.ok()) return fail(joined.status());
    group = std::move(joined).value();
    if (Status agreed = check_ranks_agree(*group, config); !agreed.ok()) return fail(agreed);
  }
  const bool lead = !group || group->rank() == 0;
  if (lead && !config.trace_file.empty()) {
    // Where the trace goes is checked now, not after the run: a missing
    // directory or a directory's name is an error before any work.
    auto probe = OutputFile::create(config.trace_file);
    if (!probe.ok()) return fail(Status(probe.status().code(), "trace: " + probe.status().message()));
    Trace::install((trace = std::make_unique<Trace>()).get());
  }
  RunOptions options{group.get()};
  options.program = "accel_train";
  auto opened = TrainingRun::open(config, std::move(options));
  if (!opened.ok()) return fail(opened.status());
  TrainingRun& run = **opened;
  const RunData& data = *run.data();
  BatchSource& source = *run.batches();
  Trainer& trainer = run.trainer();
  const std::string checkpoint_path = checkpoint_file(config.checkpoint_dir);
  const uint32_t first_epoch = run.first_epoch();
  if (lead) {
    for (const std::string& notice : trainer.notices())
      std::fprintf(stderr, "accel_train: %s\n", notice.c_str());
    for (const std::string& notice : run.notices()) std::printf("%s\n", notice.c_str());
  }
  if (config.resume && first_epoch >= config.epochs) {
    if (lead)
      std::printf(
          "the run is already finished (%u of %u epochs done): nothing to train; raise --epochs "
          "to go on, or run accel_train evaluate\n",
          first_epoch, config.epochs);
    return 0;
  }

  // Everything below prints on rank 0 only: the ranks train in lockstep
  // and every total is the job's.
  if (!lead && !std::freopen("/dev/null", "w", stdout))
    return fail(Status(StatusCode::kUnavailable, "cannot redirect the output of rank > 0"));
  print_run_summary(config, run.device().device, run.device().units, trainer, group.get(), data.description);

  FitOptions fit_options = run.fit_options();
  // mpirun gives ranks a pseudo-terminal even when its own output is a file.
  const bool interactive = !group && isatty(STDOUT_FILENO);
  auto callbacks = run.config_callbacks(interactive, fit_options.validation_data != nullptr, first_epoch);
  if (!callbacks.ok()) return fail(callbacks.status());
  const std::shared_ptr<ModelCheckpoint>& checkpoints = run.checkpoints();
  if (data.pipeline) {
    auto warn = std::make_shared<LambdaCallback>();
    warn->epoch_end = [&source](uint32_t, const Logs&) {
      if (source.skipped() > 0) std::printf("warning: %s (data.skip_corrupt)\n", source.shortfall().c_str());
      return ok_status();
    };
    add_after_progress_bar(*callbacks, warn);
  }
  // perf: the board's projection of the training steps (not of validation).
  ProjectionMeter projection(run.device().device);
  callbacks->push_back(projection.callback());
  SteadyStepMeter steady(trainer);
  callbacks->push_back(steady.callback());

  fit_options.interrupt = [&group] { return agreed_stop_signal(group.get()); };
  auto history = run.fit(fit_options, *callbacks);
  // A run that ends early says which checkpoint is still the good one.
  std::string note;
  if (checkpoints) {
    const uint32_t last = checkpoints->saved_epochs();
    note = last ? "; the last checkpoint, " + checkpoint_path + " after epoch " + std::to_string(last) +
                      ", is intact"
                : "; no checkpoint was written";
  }
  if (!history.ok()) return fail(Status(history.status().code(), history.status().message() + note));
  if (const int signal = history->interrupted) {
    write_trace();
    if (lead)
      std::fprintf(stderr, "accel_train: %s: stopped after batch %llu of %llu in epoch %u (step %llu)%s%s\n",
                   signal == SIGINT ? "interrupted (SIGINT)" : "terminated (SIGTERM)",
                   (unsigned long long)history->interrupted_batch,
                   (unsigned long long)history->interrupted_batches, history->interrupted_epoch + 1,
                   (unsigned long long)trainer.optimizer().steps(), note.c_str(),
                   checkpoints ? "; --resume continues from it" : "");
    return 128 + signal;
  }
  if (data.test.examples > 0) {
    auto tested = evaluate(trainer, data.test);
    if (!tested.ok()) return fail(tested.status());
    print_test_logs(*tested);
    if (config.ranking && lead) {
      auto ranked = rank_test_set(trainer, config, data.test);
      if (!ranked.ok()) return fail(ranked.status());
      print_ranking(*ranked);
    }
  }
  if (history->seconds > 0)
    std::printf(
        "throughput: %llu examples in %.1f s of training steps, %.0f samples/s (%.0f launches per step and "
        "replica; %.1f%% of the time waiting for input)\n",
        (unsigned long long)history->examples, history->seconds, double(history->examples) / history->seconds,
        history->launches_per_step, 100.0 * history->input_wait_seconds / history->seconds);
  if (history->steps > 0) {
    print_step_times("step time", history->step_times, history->seconds, history->steps,
                     history->input_wait_seconds);
    steady.report();
  }
  projection.report(history->steps, history->examples);
  if (!config.retrace_dir.empty())
    std::printf(
        "retrace: %s (initial weights, %llu training examples in %llu batches, the evaluation sets)\n",
        config.retrace_dir.c_str(), (unsigned long long)run.retraced_examples(),
        (unsigned long long)history->steps);
  if (checkpoints) std::printf("checkpoint: %s\n", checkpoint_path.c_str());
  return write_trace() ? 0 : 2;
}

}  // namespace

int tool_main(int argc, char** argv) {
  auto line = parse_command_line(argc, argv);
  if (!line.ok()) {
    std::fprintf(stderr, "accel_train: %s\n", line.status().to_string().c_str());
    return 2;
  }
  if (line->exit_code) return *line->exit_code;
  if (line->print_reference) {
    std::fputs(config_reference().c_str(), stdout);
    return 0;
  }
  if (line->print_config) {
    if (Status status = validate_run_config(line->config); !status.ok()) {
      std::fprintf(stderr, "accel_train: %s\n", status.to_string().c_str());
      return 2;
    }
    std::fputs(config_yaml(line->config).c_str(), stdout);
    return 0;
  }
  if (line->mode != Mode::kTrain) return infer(line->mode, line->config, line->infer);
  return train(line->config);
}

int main(int argc, char** argv) { return systole::tools::guarded_main("accel_train", tool_main, argc, argv); }
