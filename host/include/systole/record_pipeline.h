// SPDX-License-Identifier: Apache-2.0
// An input pipeline over TFRecord shards of tf.train.Example records, in
// the manner of tf.data:
//
//   files -> shard -> interleave(cycle_length, threads) -> parse
//         -> shuffle(buffer, seed) -> batch(drop_remainder) -> prefetch
//
// Determinism: for a given seed the batches are the same whatever the
// thread count. Worker threads read and parse ahead, but the order is
// decided by one consumer: round robin over the cycle's files, a finished
// file replaced by the next one in the epoch's file order (shuffled per
// epoch with the seed when shuffling).
//
// Sharding (after TensorFlow's AUTO policy): when the files divide evenly
// among the shards, shard i reads the files i, i + shards, ...; otherwise
// every shard reads every file and keeps every shards-th record of the
// interleaved order (so 3 files over 2 shards do not leave one shard with
// a third of the records). Shards are disjoint and together cover every
// record once. All shards agree on the number of batches per epoch: the
// smallest shard's full batches, so every replica of a job takes the same
// number of steps.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "systole/dataset.h"
#include "systole/status.h"
#include "systole/tf_example.h"
#include "systole/tfrecord.h"

namespace systole {

// Which features feed the model: `inputs` concatenated (in order) into an
// example's values, and an integer `label` in [0, classes): a scalar, or a
// label per position (a sequence feature, as a language model's next
// tokens).
struct ExampleColumns {
  std::vector<std::string> inputs;
  std::string label;
  uint32_t classes = 0;
};

struct RecordPipelineOptions {
  std::vector<std::string> files;                // match_files() order
  Compression compression = Compression::kAuto;  // of every file (TFRecordOptions' compression_type)
  uint32_t shard_index = 0;
  uint32_t shard_count = 1;
  uint32_t cycle_length = 4;    // files read at once
  uint32_t threads = 1;         // reading and parsing
  uint32_t shuffle_buffer = 0;  // 0: no shuffle (files in order too)
  uint64_t seed = 1;
  uint32_t batch_size = 1;
  bool drop_remainder = true;
  uint32_t prefetch = 8;  // batches ready ahead of the consumer
  // Skip records whose data is corrupt (a data CRC mismatch, or not an
  // Example), counting them, instead of ending with the error. A broken
  // frame (a length or its CRC) is found when create() counts the records,
  // and is always an error. An epoch left short of its planned batches by
  // skips ends with copies of its first examples in their place, so that
  // every epoch (and every shard of a job) has the same number of batches.
  bool skip_corrupt = false;
  // Sampled negatives, for models of interactions trained on positives
  // only (two towers): every record (its label must be 1) is followed by
  // `negatives` copies of it with the input `negative_feature` (a scalar)
  // replaced by a value drawn uniformly from that feature's distinct values
  // over all the files, labelled 0. Drawn anew each epoch from (seed,
  // epoch, shard), so a model does not learn one fixed set of non-edges.
  // A draw may hit another positive of the same record (a false negative,
  // at the rate of the record's positives over the distinct values), as
  // tf.data's and TF Recommenders' uniform samplers do; none is filtered.
  uint32_t negatives = 0;
  std::string negative_feature;
};

class RecordPipeline {
 public:
  // Counts every file's records (from the frames) and plans the shards;
  // errors name the file, or the column that the schema lacks.
  static Result<std::unique_ptr<RecordPipeline>> create(const ExampleSchema& schema,
                                                        const ExampleColumns& columns,
                                                        const RecordPipelineOptions& options);
  ~RecordPipeline();
  RecordPipeline(const RecordPipeline&) = delete;
  RecordPipeline& operator=(const RecordPipeline&) = delete;

  // The same files and features read as shard `index` of `count`, in
  // batches of `batch_size`, with a shuffle buffer of `shuffle_buffer`
  // records: planned from the records counted by create(), which are not
  // counted again.
  Result<std::unique_ptr<RecordPipeline>> shard(uint32_t index, uint32_t count, uint32_t batch_size,
                                                uint32_t shuffle_buffer) const;

  // Records in the files; examples come to (1 + negatives) per record.
  uint64_t total_records() const { return total_records_; }
  uint64_t shard_records() const { return shard_records_; }
  bool shards_by_file() const { return by_file_; }
  // Batches in each epoch (the same on every shard); with drop_remainder
  // off, the last one may be short.
  uint64_t batches_per_epoch() const { return batches_; }
  // Values per example (the inputs concatenated), and their shape (the
  // single input's shape, or flat).
  uint32_t example_values() const { return example_values_; }
  std::vector<uint32_t> example_shape() const { return example_shape_; }
  // Labels per example: the label feature's values.
  uint32_t label_width() const { return label_width_; }

  // Starts an epoch (ending any previous one): shuffles with (seed, epoch).
  // After an epoch's last batch the next epoch is already being read.
  void start_epoch(uint32_t epoch);
  // The epoch's next batch; false after its last. An error names the file,
  // record, byte offset and feature.
  Result<bool> next(Batch& batch);
  // Records skipped as corrupt so far (skip_corrupt), and the first reason.
  uint64_t skipped() const;
  std::string first_skip_reason() const;

 private:
  struct Epoch;
  RecordPipeline() = default;
  // A record's inputs and label into `row` (example_values() + 1 floats).
  Status parse_row(const std::string& record, std::vector<float>& row) const;
  // Reads `file`, adding its records' values of the negative feature to
  // negative_values_; returns its record count.
  Result<uint64_t> gather_negative_values(const std::string& file);
  // This shard's files, records and batches, from file_records_.
  void plan();

  ExampleSchema schema_;
  RecordPipelineOptions options_;
  std::vector<std::size_t> input_features_;
  std::size_t label_feature_ = 0;
  uint32_t label_width_ = 1;
  uint32_t classes_ = 0;
  uint32_t example_values_ = 0;
  bool rows_as_schema_ = false;  // a row is laid out as the schema's row
  std::vector<uint32_t> example_shape_;
  uint32_t negative_offset_ = 0;          // the replaced value's index in a row
  std::vector<float> negative_values_;    // its distinct values, ascending
  std::vector<uint64_t> file_records_;    // each file's records, in options_.files order
  std::vector<std::string> shard_files_;  // by file: this shard's; else all
  bool by_file_ = false;
  uint64_t total_records_ = 0, shard_records_ = 0, batches_ = 0;
  std::unique_ptr<Epoch> epoch_;
  uint32_t epoch_number_ = 0;
  uint64_t delivered_ = 0;  // batches next() has returned this epoch
  // Epoch epoch_number_ + 1, started when this one's last batch went out.
  std::unique_ptr<Epoch> following_;
};

// Every record of `files` in order, as an in-memory data set (evaluation
// sets).
Result<Dataset> load_tfrecord_dataset(const std::vector<std::string>& files, const ExampleSchema& schema,
                                      const ExampleColumns& columns,
                                      Compression compression = Compression::kAuto);

}  // namespace systole
