// SPDX-License-Identifier: Apache-2.0
// Data for training: IDX files (gzip or plain, as MNIST and Fashion-MNIST
// ship them) and a shuffled, batched, prefetched stream of examples.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "systole/status.h"

namespace systole {

// Examples as rows of `features` floats (any features: an image's pixels,
// height x width x 1, row-major, in [0, 1]; token ids; a record's numbers),
// and their labels: `label_width` fp32 values per example (a class index,
// exact up to 2^24; a class per position of a sequence; a regression's
// targets).
struct Dataset {
  uint32_t examples = 0;
  uint32_t features = 0;
  std::vector<uint32_t> shape;  // one example: {height, width, 1}
  uint32_t classes = 0;
  std::vector<float> values;  // examples x features, row-major
  std::vector<float> labels;  // examples x label_width
  uint32_t label_width = 1;

  // Examples [first, first + count) as a new dataset.
  Dataset slice(uint32_t first, uint32_t count) const;
};

// Where Debian's dataset-fashion-mnist package installs the files.
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// Reads an IDX image file (magic 0x00000803, uint8 pixels, N x H x W) and its
// label file (0x00000801), gzip-compressed or not. `classes` 0 takes the
// largest label + 1. Errors name the file and what is wrong with it: a bad
// magic number, dimensions, a count that differs between the two, a label
// out of range, or data that ends early.
Result<Dataset> read_idx(const std::string& images_path, const std::string& labels_path, uint32_t classes);

// The training or test split of an MNIST-style directory (train-* and
// t10k-*-idx?-ubyte, each with or without .gz), as Fashion-MNIST ships.
Result<Dataset> load_fashion_mnist(const std::string& directory, bool train, uint32_t classes = 0);

// One batch: `size` examples' features (row-major) and labels
// (label_width per example).
struct Batch {
  std::vector<float> values;
  std::vector<float> labels;
  uint32_t size = 0;
  uint32_t label_width = 1;
};

// The batches of one epoch: examples shuffled with (seed, epoch), cut into
// batches of `batch_size` with the remainder dropped, assembled on a
// background thread `prefetch` batches ahead of the consumer. A failure of
// that thread (std::bad_alloc; fault point batch_stream.produce) ends the
// epoch: next() returns it after the batches made before it.
class BatchStream {
 public:
  BatchStream(const Dataset& data, uint32_t batch_size, uint64_t seed, uint32_t epoch, bool shuffle,
              uint32_t prefetch = 4);
  ~BatchStream();
  BatchStream(const BatchStream&) = delete;
  BatchStream& operator=(const BatchStream&) = delete;

  uint32_t batches() const { return batches_; }
  // The next batch; false after the last one.
  Result<bool> next(Batch& batch);

 private:
  void produce();
  Status produce_batches();

  const Dataset& data_;
  uint32_t batch_size_;
  uint32_t batches_;
  uint32_t prefetch_;
  std::vector<uint32_t> order_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Batch> ready_;
  bool stop_ = false;
  bool finished_ = false;  // the producer has returned
  Status failure_;         // why it ended early
  std::thread worker_;
};

}  // namespace systole
