// SPDX-License-Identifier: Apache-2.0
// Handles to fp32 values in device memory.
#include "systole/device_tensor.h"

#include <atomic>
#include <string>

namespace systole {
namespace {

std::atomic<uint64_t> next_id{1};

}  // namespace

Result<DeviceTensor> DeviceTensor::over(Buffer buffer, uint64_t offset, std::size_t count) {
  if (!buffer) return Status(StatusCode::kInvalidArgument, "device tensor: no buffer");
  if (offset % sizeof(float) != 0 || offset > buffer.size() ||
      count > (buffer.size() - offset) / sizeof(float))
    return Status(StatusCode::kInvalidArgument,
                  "device tensor: " + std::to_string(count) + " values from byte " + std::to_string(offset) +
                      " do not fit a buffer of " + std::to_string(buffer.size()) + " bytes");
  auto storage = std::make_shared<Storage>();
  storage->buffer = std::move(buffer);
  storage->offset = offset;
  storage->count = count;
  storage->id = next_id++;
  DeviceTensor tensor;
  tensor.storage_ = std::move(storage);
  tensor.count_ = count;
  return tensor;
}

uint64_t DeviceTensor::address() const {
  return storage_ ? storage_->buffer.address() + storage_->offset + offset_ * sizeof(float) : 0;
}

Result<DeviceTensor> DeviceTensor::part(std::size_t offset, std::size_t count) const {
  if (!storage_) return Status(StatusCode::kInvalidArgument, "device tensor: no tensor");
  if (offset > count_ || count > count_ - offset)
    return Status(StatusCode::kInvalidArgument, "device tensor: values [" + std::to_string(offset) + ", " +
                                                    std::to_string(offset + count) + ") of a tensor of " +
                                                    std::to_string(count_));
  const std::size_t block = std::size_t(block_rows_) * block_cols_;
  if (is_view() && (offset % block != 0 || count % block != 0))
    return Status(StatusCode::kInvalidArgument,
                  "device tensor: values [" + std::to_string(offset) + ", " + std::to_string(offset + count) +
                      ") of a view are not whole blocks of " + std::to_string(block_rows_) + " x " +
                      std::to_string(block_cols_));
  DeviceTensor part = *this;
  part.offset_ = offset_ + offset;
  part.count_ = count;
  return part;
}

Result<DeviceTensor> DeviceTensor::resized(std::size_t count) const {
  if (!storage_) return Status(StatusCode::kInvalidArgument, "device tensor: no tensor");
  if (is_view()) return Status(StatusCode::kInvalidArgument, "device tensor: a view is not resized");
  if (count > room())
    return Status(StatusCode::kInvalidArgument, "device tensor: " + std::to_string(count) +
                                                    " values where its memory holds " +
                                                    std::to_string(room()));
  DeviceTensor resized = *this;
  resized.count_ = count;
  return resized;
}

Result<DeviceTensor> DeviceTensor::blocks_transposed(uint32_t rows, uint32_t cols) const {
  const std::size_t block = std::size_t(rows) * cols;
  if (!storage_) return Status(StatusCode::kInvalidArgument, "device tensor: no tensor");
  if (is_view())
    return Status(StatusCode::kInvalidArgument, "device tensor: the tensor viewed is itself a view");
  if (block == 0 || count_ % block != 0)
    return Status(StatusCode::kInvalidArgument, "device tensor: " + std::to_string(count_) +
                                                    " values are not whole blocks of " +
                                                    std::to_string(rows) + " x " + std::to_string(cols));
  DeviceTensor view = *this;
  view.block_rows_ = rows;
  view.block_cols_ = cols;
  return view;
}

Status DeviceTensor::read(float* out) const {
  if (!storage_) return Status(StatusCode::kInvalidArgument, "device tensor: no tensor");
  Buffer buffer = storage_->buffer;
  const std::size_t at = storage_->offset + offset_ * sizeof(float), bytes = count_ * sizeof(float);
  SYSTOLE_RETURN_IF_ERROR(buffer.sync(Buffer::SyncDirection::kFromDevice, bytes, at));
  return buffer.read(out, bytes, at);
}

Status DeviceTensor::write(const float* in) {
  if (!storage_) return Status(StatusCode::kInvalidArgument, "device tensor: no tensor");
  Buffer buffer = storage_->buffer;
  const std::size_t at = storage_->offset + offset_ * sizeof(float), bytes = count_ * sizeof(float);
  mark_written();
  SYSTOLE_RETURN_IF_ERROR(buffer.write(in, bytes, at));
  return buffer.sync(Buffer::SyncDirection::kToDevice, bytes, at);
}

}  // namespace systole
