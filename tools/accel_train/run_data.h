// SPDX-License-Identifier: Apache-2.0
// accel_train's data and the model that fits it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "systole/dataset.h"
#include "systole/model.h"
#include "systole/record_pipeline.h"
#include "train_config.h"

namespace systole {

// The data of a run. IDX: the sets in memory, every process stepping
// through the same global batches. TFRecord: a pipeline per process over
// its shard of the training files (a process's share of each global
// batch), the validation and test sets (optional) in memory.
struct RunData {
  Dataset train_set;                         // idx
  std::unique_ptr<RecordPipeline> pipeline;  // tfrecord
  Dataset validation, test;                  // empty when not given
  Dataset shape_of;                          // no examples: the examples' shape and classes
  uint64_t batches_per_epoch = 0;
  std::string description;
};

Result<RunData> load_run_data(const TrainConfig& config, uint32_t rank, uint32_t processes);

// The test set alone (evaluate), its labels in [0, classes).
Result<Dataset> load_test_set(const TrainConfig& config, uint32_t classes);

// The model the config describes, for data of `data`'s shape and classes.
Result<ModelSpec> model_spec(const TrainConfig& config, const Dataset& data);

}  // namespace systole
