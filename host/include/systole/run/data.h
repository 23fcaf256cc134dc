// SPDX-License-Identifier: Apache-2.0
// A run's data (the config's data section) and the model that fits it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "systole/dataset.h"
#include "systole/fit.h"
#include "systole/model.h"
#include "systole/record_pipeline.h"
#include "systole/run/config.h"

namespace systole {

// The data of a run. IDX: the sets in memory, every process stepping
// through the same global batches. TFRecord: the training files counted
// and planned (`pipeline`, read whole in global batches by itself, and cut
// into one pipeline per replica by train_source), the validation and test
// sets (optional) in memory.
struct RunData {
  Dataset train_set;                         // idx
  std::unique_ptr<RecordPipeline> pipeline;  // tfrecord
  Dataset validation, test;                  // empty when not given
  Dataset shape_of;                          // no examples: the examples' shape and classes
  uint64_t batches_per_epoch = 0;            // of global batches
  std::string description;
};

Result<RunData> load_run_data(const RunConfig& config);

// The training batches of a process whose replicas are [first, first +
// local) of the job's `total`: IDX data as shuffled global batches (each
// replica takes its slice); TFRecord data through one pipeline per local
// replica, reading its shard of the files (PipelineSource), each with its
// part of data.shuffle_buffer. Its batches_per_epoch() may be fewer than
// data.batches_per_epoch when the shards are uneven.
Result<std::unique_ptr<BatchSource>> train_source(const RunData& data, const RunConfig& config,
                                                  uint32_t first, uint32_t local, uint32_t total);

// The test set alone (evaluate), its labels in [0, classes).
Result<Dataset> load_test_set(const RunConfig& config, uint32_t classes);

// The model the config describes, for data of `data`'s shape and classes.
Result<ModelSpec> model_spec(const RunConfig& config, const Dataset& data);

}  // namespace systole
