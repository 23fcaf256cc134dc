// SPDX-License-Identifier: Apache-2.0
// IDX reading through zlib, and the shuffled, prefetched batch stream.
#include "systole/dataset.h"

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <numeric>
#include <random>

#include "systole/fault_points.h"

namespace systole {
namespace {

struct GzCloser {
  void operator()(gzFile_s* file) const { gzclose(file); }
};

// The largest data file read (decompressed): an IDX set of 2 GiB is far
// beyond any that exists, and an endless one must end somewhere.
constexpr std::size_t kMaxFileBytes = std::size_t(1) << 31;

// The whole (decompressed) content of a gzip or plain regular file.
Result<std::vector<uint8_t>> read_all(const std::string& path) {
  std::error_code error;
  if (std::filesystem::exists(path, error) && !std::filesystem::is_regular_file(path, error))
    return Status(StatusCode::kInvalidArgument, path + ": not a regular file");
  std::unique_ptr<gzFile_s, GzCloser> file(gzopen(path.c_str(), "rb"));
  if (!file) return Status(StatusCode::kNotFound, path + ": cannot open");
  std::vector<uint8_t> bytes;
  uint8_t chunk[1 << 16];
  for (;;) {
    const int got = gzread(file.get(), chunk, sizeof chunk);
    if (got < 0) {
      int code = 0;
      return Status(StatusCode::kDataLoss, path + ": corrupt gzip data (" + gzerror(file.get(), &code) + ")");
    }
    if (got == 0) break;
    if (bytes.size() + std::size_t(got) > kMaxFileBytes)
      return Status(
          StatusCode::kInvalidArgument,
          path + ": more than " + std::to_string(kMaxFileBytes >> 20) + " MiB of data (not an IDX set)");
    bytes.insert(bytes.end(), chunk, chunk + got);
  }
  return bytes;
}

uint32_t big_endian32(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
}

// Checks the IDX header: magic (uint8 data, `dimensions` dimensions), the
// dimensions, and that the data is exactly as long as they say.
Result<std::vector<uint32_t>> idx_shape(const std::vector<uint8_t>& bytes, const std::string& path,
                                        uint32_t dimensions) {
  const uint32_t magic = 0x00000800u | dimensions;
  const std::size_t header = 4 + 4 * std::size_t(dimensions);
  if (bytes.size() < header)
    return Status(StatusCode::kDataLoss,
                  path + ": truncated header (" + std::to_string(bytes.size()) + " bytes)");
  if (big_endian32(bytes.data()) != magic) {
    char text[80];
    std::snprintf(text, sizeof text, ": bad magic 0x%08x (expected 0x%08x)", big_endian32(bytes.data()),
                  magic);
    return Status(StatusCode::kInvalidArgument, path + text);
  }
  std::vector<uint32_t> shape(dimensions);
  uint64_t elements = 1;
  for (uint32_t d = 0; d < dimensions; ++d) {
    shape[d] = big_endian32(bytes.data() + 4 + 4 * d);
    if (shape[d] == 0)
      return Status(StatusCode::kInvalidArgument, path + ": dimension " + std::to_string(d) + " is zero");
    elements *= shape[d];
  }
  if (bytes.size() - header != elements)
    return Status(bytes.size() - header < elements ? StatusCode::kDataLoss : StatusCode::kInvalidArgument,
                  path + ": header declares " + std::to_string(elements) + " bytes of data, file has " +
                      std::to_string(bytes.size() - header));
  return shape;
}

}  // namespace

Dataset Dataset::slice(uint32_t first, uint32_t count) const {
  Dataset out;
  out.examples = count;
  out.features = features;
  out.shape = shape;
  out.classes = classes;
  out.label_width = label_width;
  out.values.assign(values.begin() + std::size_t(first) * features,
                    values.begin() + std::size_t(first + count) * features);
  out.labels.assign(labels.begin() + std::size_t(first) * label_width,
                    labels.begin() + std::size_t(first + count) * label_width);
  return out;
}

Result<Dataset> read_idx(const std::string& images_path, const std::string& labels_path, uint32_t classes) {
  auto image_bytes = read_all(images_path);
  if (!image_bytes.ok()) return image_bytes.status();
  auto image_shape = idx_shape(*image_bytes, images_path, 3);
  if (!image_shape.ok()) return image_shape.status();
  auto label_bytes = read_all(labels_path);
  if (!label_bytes.ok()) return label_bytes.status();
  auto label_shape = idx_shape(*label_bytes, labels_path, 1);
  if (!label_shape.ok()) return label_shape.status();
  if ((*label_shape)[0] != (*image_shape)[0])
    return Status(StatusCode::kInvalidArgument, labels_path + ": " + std::to_string((*label_shape)[0]) +
                                                    " labels for " + std::to_string((*image_shape)[0]) +
                                                    " images in " + images_path);

  Dataset data;
  data.examples = (*image_shape)[0];
  data.features = (*image_shape)[1] * (*image_shape)[2];
  data.shape = {(*image_shape)[1], (*image_shape)[2], 1};
  data.values.resize(std::size_t(data.examples) * data.features);
  const uint8_t* pixels = image_bytes->data() + 16;
  for (std::size_t i = 0; i < data.values.size(); ++i) data.values[i] = pixels[i] / 255.0f;
  const std::vector<uint8_t> label_values(label_bytes->begin() + 8, label_bytes->end());
  data.labels.assign(label_values.begin(), label_values.end());
  const uint32_t largest = *std::max_element(label_values.begin(), label_values.end());
  data.classes = classes ? classes : std::max(2u, largest + 1);
  for (uint32_t i = 0; i < data.examples; ++i)
    if (label_values[i] >= data.classes)
      return Status(StatusCode::kInvalidArgument, labels_path + ": label " + std::to_string(label_values[i]) +
                                                      " of example " + std::to_string(i) + " is not below " +
                                                      std::to_string(data.classes) + " (model.classes)");
  return data;
}

Result<Dataset> load_fashion_mnist(const std::string& directory, bool train, uint32_t classes) {
  const std::string prefix = directory + (train ? "/train" : "/t10k");
  // The plain file when only it exists, else the gzip file.
  auto pick = [](const std::string& path) {
    auto exists = [](const std::string& name) {
      std::FILE* file = std::fopen(name.c_str(), "rb");
      if (file) std::fclose(file);
      return file != nullptr;
    };
    return exists(path) && !exists(path + ".gz") ? path : path + ".gz";
  };
  return read_idx(pick(prefix + "-images-idx3-ubyte"), pick(prefix + "-labels-idx1-ubyte"), classes);
}

BatchStream::BatchStream(const Dataset& data, uint32_t batch_size, uint64_t seed, uint32_t epoch,
                         bool shuffle, uint32_t prefetch)
    : data_(data),
      batch_size_(batch_size),
      batches_(batch_size ? data.examples / batch_size : 0),
      prefetch_(std::max(1u, prefetch)),
      order_(data.examples) {
  std::iota(order_.begin(), order_.end(), 0u);
  if (shuffle) {
    // One generator per epoch, from (seed, epoch): any epoch can be
    // replayed on its own, which resuming from a checkpoint needs.
    std::seed_seq sequence{uint32_t(seed), uint32_t(seed >> 32), epoch};
    std::mt19937_64 rng(sequence);
    std::shuffle(order_.begin(), order_.end(), rng);
  }
  worker_ = std::thread([this] { produce(); });
}

BatchStream::~BatchStream() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  worker_.join();
}

void BatchStream::produce() {
  Status status;
  try {
    status = produce_batches();
  } catch (...) {
    status = current_exception_status("the batch producer");
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    finished_ = true;
    failure_ = std::move(status);
  }
  changed_.notify_all();
}

Status BatchStream::produce_batches() {
  for (uint32_t b = 0; b < batches_; ++b) {
    SYSTOLE_RETURN_IF_ERROR(fault_point(FaultPoint::kBatchProduce));
    Batch batch;
    batch.size = batch_size_;
    batch.values.resize(std::size_t(batch_size_) * data_.features);
    const uint32_t width = data_.label_width;
    batch.label_width = width;
    batch.labels.resize(std::size_t(batch_size_) * width);
    for (uint32_t i = 0; i < batch_size_; ++i) {
      const uint32_t example = order_[std::size_t(b) * batch_size_ + i];
      std::copy_n(data_.values.begin() + std::size_t(example) * data_.features, data_.features,
                  batch.values.begin() + std::size_t(i) * data_.features);
      std::copy_n(data_.labels.begin() + std::size_t(example) * width, width,
                  batch.labels.begin() + std::size_t(i) * width);
    }
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return stop_ || ready_.size() < prefetch_; });
    if (stop_) return ok_status();
    ready_.push_back(std::move(batch));
    changed_.notify_all();
  }
  return ok_status();
}

Result<bool> BatchStream::next(Batch& batch) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return !ready_.empty() || finished_; });
  if (ready_.empty()) {
    if (!failure_.ok()) return failure_;
    return false;
  }
  batch = std::move(ready_.front());
  ready_.pop_front();
  changed_.notify_all();
  return true;
}

}  // namespace systole
