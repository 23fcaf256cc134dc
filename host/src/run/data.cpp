// SPDX-License-Identifier: Apache-2.0
#include "systole/run/data.h"

#include <utility>

#include "systole/tf_example.h"
#include "systole/tfrecord.h"

namespace systole {
namespace {

// An in-memory TFRecord set (validation, test) of `patterns`; none: empty.
Result<Dataset> load_tfrecord_set(const RunConfig& config, const ExampleSchema& schema,
                                  const std::vector<std::string>& patterns) {
  if (patterns.empty()) return Dataset();
  auto files = match_files(patterns);
  if (!files.ok()) return files.status();
  auto compression = data_compression(config);
  if (!compression.ok()) return compression.status();
  return load_tfrecord_dataset(*files, schema, example_columns(config), *compression);
}

// The first `count` examples of `set` (all of them for 0).
Dataset first_examples(Dataset set, uint32_t count) {
  return count == 0 || count >= set.examples ? set : set.slice(0, count);
}

}  // namespace

Result<RunData> load_run_data(const RunConfig& config) {
  RunData data;
  if (config.data_format == "idx") {
    auto full_train = load_fashion_mnist(config.data_dir, true, config.classes);
    if (!full_train.ok()) return full_train.status();
    auto test = load_fashion_mnist(config.data_dir, false, full_train->classes);
    if (!test.ok()) return test.status();
    if (test->shape != full_train->shape)
      return Status(StatusCode::kInvalidArgument, config.data_dir + ": test images are " +
                                                      shape_text(test->shape) + ", training images " +
                                                      shape_text(full_train->shape));
    if (config.validation_examples >= full_train->examples)
      return Status(StatusCode::kInvalidArgument,
                    "data.validation_examples: " + std::to_string(config.validation_examples) +
                        " leaves no training examples (the set has " + std::to_string(full_train->examples) +
                        ")");
    const uint32_t train_examples = full_train->examples - config.validation_examples;
    data.train_set = full_train->slice(0, train_examples);
    data.validation = full_train->slice(train_examples, config.validation_examples);
    data.test = first_examples(std::move(test).value(), config.test_examples);
    data.shape_of = data.train_set.slice(0, 0);
    data.batches_per_epoch = train_examples / config.global_batch;
    if (data.batches_per_epoch == 0)
      return Status(StatusCode::kInvalidArgument,
                    "train.global_batch: " + std::to_string(config.global_batch) + " is more than the " +
                        std::to_string(train_examples) + " training examples: no batch to train on");
    data.description = std::to_string(train_examples) + " training, " +
                       std::to_string(data.validation.examples) + " validation, " +
                       std::to_string(data.test.examples) + " test examples from " + config.data_dir;
    return data;
  }
  if (config.classes == 0)
    return Status(StatusCode::kInvalidArgument,
                  "model.classes: required with tfrecord data (the labels are not scanned ahead)");
  auto schema = example_schema(config);
  if (!schema.ok()) return schema.status();
  auto files = match_files(config.train_files);
  if (!files.ok()) return Status(files.status().code(), "data.train: " + files.status().message());
  RecordPipelineOptions options;
  options.files = *files;
  auto compression = data_compression(config);
  if (!compression.ok()) return compression.status();
  options.compression = *compression;
  options.cycle_length = config.cycle_length;
  options.threads = config.data_threads;
  options.shuffle_buffer = config.shuffle_buffer;
  options.seed = config.seed;
  options.batch_size = config.global_batch;
  options.prefetch = config.prefetch;
  options.skip_corrupt = config.skip_corrupt;
  options.negatives = config.negatives;
  options.negative_feature = config.negative_feature;
  auto pipeline = RecordPipeline::create(*schema, example_columns(config), options);
  if (!pipeline.ok()) return pipeline.status();
  data.pipeline = std::move(pipeline).value();
  auto validation = load_tfrecord_set(config, *schema, config.validation_files);
  if (!validation.ok())
    return Status(validation.status().code(), "data.validation: " + validation.status().message());
  auto test = load_tfrecord_set(config, *schema, config.test_files);
  if (!test.ok()) return Status(test.status().code(), "data.test: " + test.status().message());
  data.validation = std::move(validation).value();
  data.test = first_examples(std::move(test).value(), config.test_examples);
  data.shape_of.features = data.pipeline->example_values();
  data.shape_of.shape = data.pipeline->example_shape();
  data.shape_of.classes = config.classes;
  data.batches_per_epoch = data.pipeline->batches_per_epoch();
  const RecordPipeline& p = *data.pipeline;
  if (data.batches_per_epoch == 0)
    return Status(StatusCode::kInvalidArgument,
                  "train.global_batch: " + std::to_string(config.global_batch) + " is more than the " +
                      std::to_string(p.total_records()) + " training record(s) in data.train (" +
                      std::to_string(files->size()) + " file(s)): no batch to train on");
  data.description = std::to_string(p.total_records()) + " training records in " +
                     std::to_string(files->size()) + " file(s)" +
                     (config.negatives > 0 ? " (positives; " + std::to_string(config.negatives) +
                                                 " negatives sampled per positive each epoch)"
                                           : "") +
                     ", " + std::to_string(data.validation.examples) + " validation, " +
                     std::to_string(data.test.examples) + " test examples (TFRecord)";
  return data;
}

Result<std::unique_ptr<BatchSource>> train_source(const RunData& data, const RunConfig& config,
                                                  uint32_t first, uint32_t local, uint32_t total) {
  if (!data.pipeline)
    return std::unique_ptr<BatchSource>(
        std::make_unique<ArraySource>(data.train_set, config.global_batch, config.seed));
  if (total == 0 || config.global_batch % total != 0)
    return Status(StatusCode::kInvalidArgument, "train.global_batch: " + std::to_string(config.global_batch) +
                                                    " does not divide among " + std::to_string(total) +
                                                    " replicas");
  // The job's shuffle buffer, shared out: the memory is the same however
  // many replicas there are, and each shard's the same however they are
  // spread over processes.
  const uint32_t buffer = uint32_t((uint64_t(config.shuffle_buffer) + total - 1) / total);
  auto source =
      PipelineSource::per_replica(*data.pipeline, first, local, total, config.global_batch / total, buffer);
  if (!source.ok()) return Status(source.status().code(), "data.train: " + source.status().message());
  return std::unique_ptr<BatchSource>(std::move(source).value());
}

Result<Dataset> load_test_set(const RunConfig& config, uint32_t classes) {
  if (config.data_format == "idx") return load_fashion_mnist(config.data_dir, false, classes);
  if (config.test_files.empty())
    return Status(StatusCode::kInvalidArgument, "data.test: evaluate needs the test files' pattern(s)");
  auto schema = example_schema(config);
  if (!schema.ok()) return schema.status();
  RunConfig with_classes = config;
  with_classes.classes = classes;
  auto test = load_tfrecord_set(with_classes, *schema, config.test_files);
  if (!test.ok()) return Status(test.status().code(), "data.test: " + test.status().message());
  return test;
}

Result<ModelSpec> model_spec(const RunConfig& config, const Dataset& data) {
  ModelSpec spec;
  const uint32_t classes = config.classes ? config.classes : data.classes;
  if (config.layers.empty()) {
    spec = dense_stack(data.features, config.hidden, classes);
  } else {
    spec.layers = config.layers;
    spec.classes = classes;
    spec.input_shape = config.input_shape.empty() ? Shape(data.shape) : config.input_shape;
  }
  if (shape_elements(spec.input_shape) != data.features)
    return Status(StatusCode::kInvalidArgument,
                  "model.input_shape: " + shape_text(spec.input_shape) + " holds " +
                      std::to_string(shape_elements(spec.input_shape)) + " values, the data's examples " +
                      std::to_string(data.features) + " (" + shape_text(data.shape) + ")");
  return spec;
}

}  // namespace systole
