// SPDX-License-Identifier: Apache-2.0
// accel_train's callbacks.
#include "callbacks.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>

namespace systole {

std::optional<double> EpochLogs::get(const std::string& monitor) const {
  if (monitor == "loss") return loss;
  if (monitor == "accuracy") return accuracy;
  if (monitor == "val_loss") return val_loss;
  if (monitor == "val_accuracy") return val_accuracy;
  return std::nullopt;
}

Improvement::Improvement(std::string monitor, double min_delta)
    : monitor_(std::move(monitor)),
      min_delta_(min_delta),
      maximise_(monitor_.find("accuracy") != std::string::npos) {}

Result<bool> Improvement::update(const EpochLogs& logs, const char* field) {
  const std::optional<double> value = logs.get(monitor_);
  if (!value)
    return Status(StatusCode::kInvalidArgument,
                  std::string(field) + ": " + monitor_ + " is not available (the run has no validation set)");
  const bool better = !best_ || (maximise_ ? *value - min_delta_ > *best_ : *value + min_delta_ < *best_);
  if (better) best_ = *value;
  return better;
}

Status TerminateOnNaN::on_batch_end(const BatchLogs& logs) {
  if (std::isfinite(logs.loss)) return ok_status();
  return Status(StatusCode::kAborted, "epoch " + std::to_string(logs.epoch + 1) + ", batch " +
                                          std::to_string(logs.batch) + " (step " + std::to_string(logs.step) +
                                          "): the loss is " + (std::isnan(logs.loss) ? "NaN" : "infinite") +
                                          "; training stopped (callbacks.terminate_on_nan)");
}

EarlyStopping::EarlyStopping(const TrainConfig& config, Trainer& trainer)
    : improvement_(config.early_stopping_monitor, config.early_stopping_min_delta),
      patience_(config.early_stopping_patience),
      restore_best_(config.early_stopping_restore_best),
      trainer_(trainer) {}

Status EarlyStopping::on_epoch_end(const EpochLogs& logs, bool& stop) {
  ++wait_;
  auto improved = improvement_.update(logs, "callbacks.early_stopping.monitor");
  if (!improved.ok()) return improved.status();
  if (*improved) {
    wait_ = 0;
    best_epoch_ = logs.epoch;
    if (restore_best_) {
      const ParameterStore& store = trainer_.parameters();
      best_weights_.trainable = store.trainable();
      best_weights_.buffers = store.buffers();
      best_weights_.tables = store.tables();
    }
    return ok_status();
  }
  if (wait_ < patience_ || logs.epoch == 0) return ok_status();
  stop = true;
  std::printf("Epoch %u: early stopping (%s has not improved on %.4f for %u epoch(s))\n", logs.epoch + 1,
              improvement_.monitor().c_str(), *improvement_.best(), wait_);
  if (restore_best_) {
    std::printf("Restoring model weights from the end of the best epoch: %u.\n", best_epoch_ + 1);
    // Weights only: the optimizer's state goes on, as Keras' does.
    SYSTOLE_RETURN_IF_ERROR(trainer_.restore(best_weights_, trainer_.optimizer().steps()));
  }
  return ok_status();
}

ModelCheckpoint::ModelCheckpoint(const TrainConfig& config, std::function<Status(uint32_t)> save)
    : dir_(config.checkpoint_dir), save_(std::move(save)) {
  if (config.save_best_only) best_only_.emplace(config.checkpoint_monitor, 0.0);
}

Status ModelCheckpoint::on_epoch_end(const EpochLogs& logs, bool&) {
  if (best_only_) {
    const std::optional<double> before = best_only_->best();
    auto improved = best_only_->update(logs, "checkpoint.monitor");
    if (!improved.ok()) return improved.status();
    if (!*improved) {
      std::printf("Epoch %u: %s did not improve from %.5f\n", logs.epoch + 1, best_only_->monitor().c_str(),
                  *before);
      return ok_status();
    }
    std::printf("Epoch %u: %s improved from %s to %.5f, saving the model to %s\n", logs.epoch + 1,
                best_only_->monitor().c_str(), before ? std::to_string(*before).c_str() : "inf",
                *best_only_->best(), dir_.c_str());
  }
  SYSTOLE_RETURN_IF_ERROR(save_(logs.epoch + 1));
  saved_epochs_ = logs.epoch + 1;
  return ok_status();
}

Result<std::unique_ptr<CsvLogger>> CsvLogger::create(const TrainConfig& config, bool validation) {
  const std::string& path = config.csv_log;
  const bool header = !config.csv_append || !std::filesystem::exists(path);
  std::ofstream out(path, config.csv_append ? std::ios::app : std::ios::trunc);
  if (!out) return Status(StatusCode::kUnavailable, "callbacks.csv_logger.filename: cannot open " + path);
  if (header)
    out << "epoch,accuracy,learning_rate,loss" << (validation ? ",val_accuracy,val_loss" : "") << "\n";
  out.flush();
  if (!out) return Status(StatusCode::kUnavailable, path + ": write failed");
  return std::unique_ptr<CsvLogger>(new CsvLogger(path, std::move(out), validation));
}

namespace {

// The shortest text that reads back as `value` (Python's repr).
template <class T>
std::string shortest(T value) {
  char text[64];
  const auto end = std::to_chars(text, text + sizeof text, value).ptr;
  return std::string(text, end);
}

}  // namespace

Status CsvLogger::on_epoch_end(const EpochLogs& logs, bool&) {
  // The rate is the optimizer's float; the means are doubles.
  out_ << logs.epoch << ',' << shortest(logs.accuracy) << ',' << shortest(float(logs.learning_rate)) << ','
       << shortest(logs.loss);
  if (validation_)
    out_ << ',' << shortest(logs.val_accuracy.value_or(NAN)) << ',' << shortest(logs.val_loss.value_or(NAN));
  out_ << "\n";
  out_.flush();
  if (!out_) return Status(StatusCode::kUnavailable, path_ + ": write failed");
  return ok_status();
}

Result<std::unique_ptr<TensorBoard>> TensorBoard::create(const TrainConfig& config, bool validation) {
  auto train = SummaryWriter::create(config.tensorboard_dir + "/train");
  if (!train.ok()) return Status(train.status().code(), "tensorboard: " + train.status().message());
  std::optional<SummaryWriter> validated;
  if (validation) {
    auto writer = SummaryWriter::create(config.tensorboard_dir + "/validation");
    if (!writer.ok()) return Status(writer.status().code(), "tensorboard: " + writer.status().message());
    validated.emplace(std::move(writer).value());
  }
  return std::unique_ptr<TensorBoard>(
      new TensorBoard(config.tensorboard_update_freq, std::move(train).value(), std::move(validated)));
}

Status TensorBoard::on_batch_end(const BatchLogs& logs) {
  if (update_freq_ == 0 || logs.step % update_freq_ != 0) return ok_status();
  SYSTOLE_RETURN_IF_ERROR(train_.scalar("batch_loss", float(logs.loss), int64_t(logs.step)));
  return train_.scalar("batch_accuracy", float(logs.accuracy), int64_t(logs.step));
}

Status TensorBoard::on_epoch_end(const EpochLogs& logs, bool&) {
  const int64_t step = logs.epoch;
  SYSTOLE_RETURN_IF_ERROR(train_.scalar("epoch_loss", float(logs.loss), step));
  SYSTOLE_RETURN_IF_ERROR(train_.scalar("epoch_accuracy", float(logs.accuracy), step));
  SYSTOLE_RETURN_IF_ERROR(train_.scalar("epoch_learning_rate", float(logs.learning_rate), step));
  SYSTOLE_RETURN_IF_ERROR(train_.flush());
  if (validation_ && logs.val_loss && logs.val_accuracy) {
    SYSTOLE_RETURN_IF_ERROR(validation_->scalar("epoch_loss", float(*logs.val_loss), step));
    SYSTOLE_RETURN_IF_ERROR(validation_->scalar("epoch_accuracy", float(*logs.val_accuracy), step));
    SYSTOLE_RETURN_IF_ERROR(validation_->flush());
  }
  return ok_status();
}

}  // namespace systole
