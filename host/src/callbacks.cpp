// SPDX-License-Identifier: Apache-2.0
// The library's callbacks.
#include "systole/callbacks.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "systole/trace.h"
#include "systole/trainer.h"
#include "systole/training_checkpoint.h"

namespace systole {
namespace {

using Clock = std::chrono::steady_clock;

// The logs as Keras' progress bar shows them: loss first, then the other
// metrics, then the validation ones in the same order; the learning rate
// is not shown.
std::string metrics_text(const Logs& logs) {
  std::string text;
  auto add = [&](const std::string& name, double value) {
    char number[64];
    std::snprintf(number, sizeof number, "%.4f", value);
    text += " - " + name + ": " + number;
  };
  for (const char* prefix : {"", "val_"}) {
    const std::string loss = std::string(prefix) + "loss";
    if (auto value = log_value(logs, loss)) add(loss, *value);
    for (const auto& [name, value] : logs) {
      const bool validation = name.rfind("val_", 0) == 0;
      if (name != loss && name != "learning_rate" && validation == (*prefix != 0)) add(name, value);
    }
  }
  return text;
}

// The shortest text that reads back as `value` (Python's repr).
template <class T>
std::string shortest(T value) {
  char text[64];
  const auto end = std::to_chars(text, text + sizeof text, value).ptr;
  return std::string(text, end);
}

}  // namespace

Status ProgressBar::on_epoch_begin(uint32_t epoch, const Logs&) {
  std::printf("Epoch %u/%u\n", epoch + 1, params().epochs);
  std::fflush(stdout);
  start_ = Clock::now();
  seconds_ = 0;
  return ok_status();
}

// "  7/469 [>.............................] - 1s 15ms/step - loss: 0.4123 - accuracy: 0.8512"
std::string ProgressBar::line(uint64_t batch, const Logs& logs) const {
  constexpr int kWidth = 30;
  const uint64_t steps = params().steps;
  const int done = steps ? int(double(batch) / double(steps) * kWidth) : kWidth;
  std::string bar(kWidth, '.');
  for (int i = 0; i < done; ++i) bar[i] = '=';
  if (batch < steps && done < kWidth) bar[done] = '>';
  const std::string count = std::to_string(steps);
  char text[256];
  std::snprintf(text, sizeof text, "%*llu/%s [%s] - %.0fs %.0fms/step", int(count.size()),
                (unsigned long long)batch, count.c_str(), bar.c_str(), seconds_,
                batch ? seconds_ * 1e3 / double(batch) : 0.0);
  return text + metrics_text(logs);
}

Status ProgressBar::on_train_batch_end(uint64_t batch, const Logs& logs) {
  seconds_ = std::chrono::duration<double>(Clock::now() - start_).count();
  const uint64_t done = batch + 1;
  const bool log_line =
      !options_.interactive && options_.log_every && done % options_.log_every == 0 && done < params().steps;
  if (options_.interactive || log_line) {
    std::printf(options_.interactive ? "\r%s" : "%s\n", line(done, logs).c_str());
    std::fflush(stdout);
  }
  return ok_status();
}

Status ProgressBar::on_epoch_end(uint32_t, const Logs& logs) {
  std::printf("%s%s\n", options_.interactive ? "\r" : "", line(params().steps, logs).c_str());
  std::fflush(stdout);
  return ok_status();
}

Status TerminateOnNaN::on_train_batch_end(uint64_t batch, const Logs& logs) {
  const double loss = log_value(logs, "loss").value_or(0.0);
  if (std::isfinite(loss)) return ok_status();
  return Status(StatusCode::kAborted,
                "epoch " + std::to_string(epoch_ + 1) + ", batch " + std::to_string(batch + 1) + " (step " +
                    std::to_string(trainer().optimizer().steps()) + "): the loss is " +
                    (std::isnan(loss) ? "NaN" : "infinite") + "; training stopped (TerminateOnNaN)");
}

Improvement::Improvement(std::string monitor, double min_delta)
    : monitor_(std::move(monitor)),
      min_delta_(min_delta),
      // Keras' mode "auto": losses, errors and perplexities fall as the
      // model improves; accuracies, AUC and the like rise.
      maximise_(monitor_.find("loss") == std::string::npos && monitor_.find("error") == std::string::npos &&
                monitor_.find("perplexity") == std::string::npos) {}

Result<bool> Improvement::update(const Logs& logs, const std::string& owner) {
  const std::optional<double> value = log_value(logs, monitor_);
  if (!value)
    return Status(StatusCode::kInvalidArgument,
                  owner + ": " + monitor_ + " is not available (the run has no validation set)");
  const bool better = !best_ || (maximise_ ? *value - min_delta_ > *best_ : *value + min_delta_ < *best_);
  if (better) best_ = *value;
  return better;
}

EarlyStopping::EarlyStopping(EarlyStoppingOptions options)
    : options_(std::move(options)), improvement_(options_.monitor, options_.min_delta) {}

Status EarlyStopping::on_epoch_end(uint32_t epoch, const Logs& logs) {
  ++wait_;
  auto improved = improvement_.update(logs, "EarlyStopping's monitor");
  if (!improved.ok()) return improved.status();
  if (*improved) {
    wait_ = 0;
    best_epoch_ = epoch;
    if (options_.restore_best_weights) {
      const ParameterStore& store = trainer().parameters();
      best_weights_.trainable = store.trainable();
      best_weights_.buffers = store.buffers();
      best_weights_.tables = store.tables();
    }
    return ok_status();
  }
  if (wait_ < options_.patience || epoch == 0) return ok_status();
  request_stop_training();
  std::printf("Epoch %u: early stopping (%s has not improved on %.4f for %u epoch(s))\n", epoch + 1,
              improvement_.monitor().c_str(), *improvement_.best(), wait_);
  if (options_.restore_best_weights) {
    std::printf("Restoring model weights from the end of the best epoch: %u.\n", best_epoch_ + 1);
    // Weights only: the optimizer's state goes on, as Keras' does.
    SYSTOLE_RETURN_IF_ERROR(trainer().restore(best_weights_, trainer().optimizer().steps()));
  }
  return ok_status();
}

ModelCheckpoint::ModelCheckpoint(ModelCheckpointOptions options, uint32_t epochs_done)
    : options_(std::move(options)), saved_epochs_(epochs_done) {
  if (options_.save_best_only) best_only_.emplace(options_.monitor, 0.0);
}

Status ModelCheckpoint::on_epoch_end(uint32_t epoch, const Logs& logs) {
  if (best_only_) {
    const std::optional<double> before = best_only_->best();
    auto improved = best_only_->update(logs, "ModelCheckpoint's monitor");
    if (!improved.ok()) return improved.status();
    if (!*improved) {
      std::printf("Epoch %u: %s did not improve from %.5f\n", epoch + 1, best_only_->monitor().c_str(),
                  *before);
      return ok_status();
    }
    std::printf("Epoch %u: %s improved from %s to %.5f, saving the model to %s\n", epoch + 1,
                best_only_->monitor().c_str(), before ? std::to_string(*before).c_str() : "inf",
                *best_only_->best(), options_.dir.c_str());
  }
  TraceScope span("checkpoint", "host", Trace::kHostTrack);
  SYSTOLE_RETURN_IF_ERROR(
      write_safetensors(checkpoint_file(options_.dir), make_checkpoint(trainer(), epoch + 1)));
  SYSTOLE_RETURN_IF_ERROR(write_safetensors(model_file(options_.dir), make_model_file(trainer())));
  saved_epochs_ = epoch + 1;
  return ok_status();
}

Result<std::shared_ptr<CsvLogger>> CsvLogger::create(const CsvLoggerOptions& options) {
  const std::string& path = options.filename;
  const bool header = !options.append || !std::filesystem::exists(path);
  errno = 0;
  std::ofstream out(path, options.append ? std::ios::app : std::ios::trunc);
  if (!out)
    return Status(StatusCode::kUnavailable,
                  "CSVLogger: cannot open " + path + (errno ? std::string(": ") + std::strerror(errno) : ""));
  return std::shared_ptr<CsvLogger>(new CsvLogger(path, std::move(out), header));
}

Status CsvLogger::on_epoch_end(uint32_t epoch, const Logs& logs) {
  // The columns are the first epoch's (a later epoch without validation
  // leaves its cells empty, as Keras' does).
  if (columns_.empty())
    for (const auto& [name, value] : logs) columns_.push_back(name);
  if (header_) {
    out_ << "epoch";
    for (const std::string& name : columns_) out_ << ',' << name;
    out_ << "\n";
    header_ = false;
  }
  out_ << epoch;
  for (const std::string& name : columns_) {
    out_ << ',';
    // The rate is the optimizer's float; the means are doubles.
    if (auto value = log_value(logs, name))
      out_ << (name == "learning_rate" ? shortest(float(*value)) : shortest(*value));
  }
  out_ << "\n";
  out_.flush();
  if (!out_) return Status(StatusCode::kUnavailable, path_ + ": write failed");
  return ok_status();
}

Result<std::shared_ptr<TensorBoard>> TensorBoard::create(const TensorBoardOptions& options, bool validation) {
  auto train = SummaryWriter::create(options.log_dir + "/train");
  if (!train.ok()) return Status(train.status().code(), "TensorBoard: " + train.status().message());
  std::optional<SummaryWriter> validated;
  if (validation) {
    auto writer = SummaryWriter::create(options.log_dir + "/validation");
    if (!writer.ok()) return Status(writer.status().code(), "TensorBoard: " + writer.status().message());
    validated.emplace(std::move(writer).value());
  }
  return std::shared_ptr<TensorBoard>(
      new TensorBoard(options.update_freq, std::move(train).value(), std::move(validated)));
}

Status TensorBoard::on_train_batch_end(uint64_t, const Logs& logs) {
  const uint64_t step = trainer().optimizer().steps();
  if (update_freq_ == 0 || step % update_freq_ != 0) return ok_status();
  for (const auto& [name, value] : logs)
    SYSTOLE_RETURN_IF_ERROR(train_.scalar("batch_" + name, float(value), int64_t(step)));
  return ok_status();
}

Status TensorBoard::on_epoch_end(uint32_t epoch, const Logs& logs) {
  bool validated = false;
  for (const auto& [name, value] : logs) {
    const bool validation = name.rfind("val_", 0) == 0;
    if (validation && !validation_) continue;
    SummaryWriter& writer = validation ? *validation_ : train_;
    SYSTOLE_RETURN_IF_ERROR(
        writer.scalar("epoch_" + name.substr(validation ? 4 : 0), float(value), int64_t(epoch)));
    validated |= validation;
  }
  SYSTOLE_RETURN_IF_ERROR(train_.flush());
  if (validated) SYSTOLE_RETURN_IF_ERROR(validation_->flush());
  return ok_status();
}

}  // namespace systole
