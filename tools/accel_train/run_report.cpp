// SPDX-License-Identifier: Apache-2.0
#include "run_report.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "systole/callbacks.h"

namespace systole {
namespace {

void print_projection(const Projection& p, uint64_t steps, uint64_t examples) {
  std::printf("projection: %s (modelled, not measured)\n", p.board.c_str());
  std::printf(
      "  %.3f ms per step, %.0f samples/s; per step and unit %.3f ms in launches (array utilization "
      "%.1f%%) and %.3f ms on the host link (%.3f MB both ways); bound by %s (%llu of %llu launches "
      "compute-bound); the host's own work (loss, all-reduce, optimizer) is not included\n",
      p.seconds / steps * 1e3, examples / p.seconds,
      p.launch_seconds / steps / std::max(1u, p.compute_units) * 1e3, 100.0 * p.utilization(),
      p.link_seconds / steps / std::max(1u, p.compute_units) * 1e3,
      double(p.link_bytes) / steps / std::max(1u, p.compute_units) * 1e-6, p.bound(),
      (unsigned long long)p.compute_bound, (unsigned long long)p.launches);
}

}  // namespace

void print_step_times(const char* label, const StepTimes& times, double seconds, uint64_t steps,
                      std::optional<double> input_seconds) {
  const double per_step = 1e3 / double(steps);
  const double total = seconds * per_step;
  std::vector<std::pair<const char*, double>> parts = {
      {"array products", times.device.launch_seconds * per_step},
      {"staging", times.device.staging_seconds * per_step},
      {"host layers", times.host_layers() * per_step},
      {"all-reduce", times.all_reduce * per_step},
      {"optimizer", times.optimizer * per_step},
  };
  if (input_seconds) parts.push_back({"input", *input_seconds * per_step});
  std::string text;
  double listed = 0;
  for (const auto& [name, ms] : parts) {
    char part[96];
    std::snprintf(part, sizeof part, "%s %.2f (%.0f %%), ", name, ms, total > 0 ? 100.0 * ms / total : 0.0);
    text += part;
    listed += ms;
  }
  std::printf("%s: %.2f ms = %sother %.2f\n", label, total, text.c_str(), total - listed);
}

std::shared_ptr<Callback> SteadyStepMeter::callback() {
  auto meter = std::make_shared<LambdaCallback>();
  meter->train_batch_begin = [this](uint64_t, const Logs&) {
    begun_ = Clock::now();
    return ok_status();
  };
  meter->train_batch_end = [this](uint64_t, const Logs&) {
    last_ = trainer_.step_times();
    if (!first_) {
      first_ = last_;
      return ok_status();
    }
    seconds_ += std::chrono::duration<double>(Clock::now() - begun_).count();
    ++steps_;
    return ok_status();
  };
  return meter;
}

void SteadyStepMeter::report() const {
  // The batches' input is fetched before their begin, outside these times.
  if (steps_ > 0)
    print_step_times("step time after the first step", last_.since(*first_), seconds_, steps_, std::nullopt);
}

void print_run_summary(const RunConfig& config, const Device& device, const std::vector<uint32_t>& units,
                       const Trainer& trainer, const ProcessGroup* group, const std::string& data) {
  std::printf("device: %s, %u replica(s) on units %s\n", device.info().name.c_str(), trainer.local_replicas(),
              join(units, ",").c_str());
  if (group)
    std::printf("job: %u processes x %u replica(s) = %u replicas in sync (mpi)\n", group->size(),
                trainer.local_replicas(), trainer.replicas());
  const ModelSpec& spec = trainer.model().spec();
  const std::string tables =
      trainer.parameters().tables().empty()
          ? ""
          : " + " + std::to_string(trainer.parameters().tables().size()) +
                " in embedding tables (adagrad lr=" + std::to_string(config.embedding_learning_rate) + ")";
  std::printf(
      "model: input %s, %u classes, %zu trainable parameters%s; %s lr=%g (%s); global batch %u (%u per "
      "replica)\n%s",
      shape_text(spec.input_shape).c_str(), spec.classes, trainer.parameters().trainable().size(),
      tables.c_str(), config.optimizer.c_str(), double(config.learning_rate), config.schedule.c_str(),
      config.global_batch, trainer.per_replica_batch(), trainer.model().summary().c_str());
  std::printf("torch: %s\n", trainer.model().torch_code().c_str());
  std::printf("data: %s\n", data.c_str());
}

void print_test_logs(const Logs& logs) {
  std::printf("test_loss: %.4f", logs.at("loss"));
  for (const auto& [name, value] : logs)
    if (name != "loss") std::printf(" - test_%s: %.4f", name.c_str(), value);
  std::printf("\n");
}

void print_ranking(const RankingReport& report) {
  std::printf("ranking: %zu test users (of %zu), %zu candidate items; AUC over %u test pairs\n", report.users,
              report.all_users, report.candidates, report.pairs);
  std::printf("  model:      auc %.4f - recall@%u %.4f\n", report.model_auc, report.k, report.model_recall);
  std::printf("  popularity: auc %.4f - recall@%u %.4f\n", report.popularity_auc, report.k,
              report.popularity_recall);
}

ProjectionMeter::ProjectionMeter(const Device& device) : model_(device.card_model()) {
  if (model_) total_ = model_->projection().since(model_->projection());  // zero
}

std::shared_ptr<Callback> ProjectionMeter::callback() {
  auto meter = std::make_shared<LambdaCallback>();
  if (!model_) return meter;
  // Each training step's work, and nothing between steps: not validation,
  // nor what an epoch's end brings from the card (the replicas' check, a
  // checkpoint).
  meter->train_batch_begin = [this](uint64_t, const Logs&) {
    step_start_ = model_->projection();
    return ok_status();
  };
  meter->train_batch_end = [this](uint64_t, const Logs&) {
    if (!step_start_) return ok_status();
    *total_ += model_->projection().since(*step_start_);
    step_start_.reset();
    return ok_status();
  };
  return meter;
}

void ProjectionMeter::report(uint64_t steps, uint64_t examples) const {
  if (total_ && steps > 0) print_projection(*total_, steps, examples);
}

}  // namespace systole
