// SPDX-License-Identifier: Apache-2.0
// A run's configuration (the run library, Systole::run): a YAML file or
// document (accel_train's --config, systole.Model's config), then
// overrides (accel_train's flags, a Python dict), validated.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "systole/layer.h"
#include "systole/record_pipeline.h"
#include "systole/status.h"
#include "systole/tf_example.h"
#include "systole/trainer.h"

namespace systole {

struct RunConfig {
  std::string backend = "sw_emu";
  std::string device = "0";      // which board: xrt's index, or uart's serial port
  std::string devices = "auto";  // "auto", a count "4", or indices "[0, 2]"
  std::string array = "128x128";
  std::string engine = "fast";
  std::string xclbin;  // xrt: the bitstream (Makefile.fpga builds one)
  // perf: the board modelled, and overrides of its clock and host link
  // (0: the board's own).
  std::string board = "u55c";
  double clock_mhz = 0;
  uint32_t pcie_gen = 0, pcie_lanes = 0;
  // The model: a list of layers (Keras style), or `hidden`, the widths of
  // a dense ReLU stack (the shorthand; used when `layers` is empty).
  std::vector<LayerConfig> layers;
  std::vector<uint32_t> hidden = {256, 128};
  Shape input_shape;            // empty: the data's example shape
  uint32_t classes = 0;         // 0: from the training labels
  std::string initial_weights;  // a safetensors file to start from (empty: from the seed)
  // data.format idx: an MNIST-style directory, the validation set held out
  // from the end of the training set.
  std::string data_format = "idx";  // or "tfrecord"
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  uint32_t validation_examples = 5000;
  uint32_t test_examples = 0;  // the test set's first examples evaluated (0: all)
  // data.format tfrecord: file patterns of tf.train.Example shards (train
  // required, validation and test optional), their schema, which features
  // feed the model, and the pipeline's settings.
  std::vector<std::string> train_files, validation_files, test_files;
  std::vector<FeatureSpec> features;
  std::vector<std::string> inputs;
  std::string label = "label";
  uint32_t shuffle_buffer = 10000;
  uint32_t cycle_length = 4;
  uint32_t data_threads = 2;
  uint32_t prefetch = 8;
  bool skip_corrupt = false;
  std::string compression = "auto";  // of the TFRecord files: auto, none, gzip, zlib
  // data.negatives {count, feature}: training files of positives, each
  // followed by `count` copies with `feature` drawn anew every epoch.
  uint32_t negatives = 0;
  std::string negative_feature;
  uint32_t epochs = 15;
  uint32_t steps_per_epoch = 0;  // 0: every full batch of the training set
  // The training settings the library has too take the library's defaults.
  uint32_t global_batch = TrainerConfig().global_batch;
  // The optimizer (systole/optimizer.h): its name in the registry and its
  // settings.
  // Keras' compile(loss=..., metrics=[...]): registered classes by type.
  LossConfig loss = TrainerConfig().loss;
  std::vector<MetricConfig> metrics = TrainerConfig().metrics;
  std::string optimizer = OptimizerConfig().name;
  float learning_rate = OptimizerConfig().learning_rate;
  float momentum = OptimizerConfig().momentum;
  bool nesterov = OptimizerConfig().nesterov;
  float beta1 = OptimizerConfig().beta1;
  float beta2 = OptimizerConfig().beta2;
  float epsilon = OptimizerConfig().epsilon;
  float initial_accumulator = OptimizerConfig().initial_accumulator;
  float trust_coefficient = OptimizerConfig().trust_coefficient;
  std::optional<float> weight_decay = OptimizerConfig().weight_decay;
  float clipnorm = OptimizerConfig().clipnorm;
  float global_clipnorm = OptimizerConfig().global_clipnorm;
  // Adagrad on embedding tables' touched rows.
  float embedding_learning_rate = OptimizerConfig().embedding_learning_rate;
  float embedding_initial_accumulator = OptimizerConfig().embedding_initial_accumulator;
  // The learning-rate schedule over optimizer steps (host/optimizer.h):
  // constant, cosine (to 0 over decay_steps; 0: the rest of the run after
  // the warmup), exponential or step (decay_rate every decay_steps),
  // after warmup_steps of linear warmup.
  std::string schedule = "constant";
  uint64_t decay_steps = 0;
  double decay_rate = 0.1;
  uint64_t warmup_steps = 0;
  // Progress lines when stdout is not a terminal: one every log_every
  // steps (0: the epoch's line only), as Keras' verbose=2 logs.
  uint32_t log_every = 0;
  uint64_t seed = TrainerConfig().seed;
  uint32_t steps_per_execution = TrainerConfig().steps_per_execution;  // evaluation batches per command list
  // host, or device: the parameters, gradients and optimizer state stay on
  // the card between steps (Placement::kDevice).
  std::string placement = "host";
  // ranking: after training, a two-tower model (its inputs [user id, item
  // id], its last layer a dot) is ranked on the test set's interactions:
  // AUC over the test pairs and recall@k over its positives, against the
  // popularity baseline, for at most ranking_users users (sampled).
  bool ranking = false;
  uint32_t ranking_k = 10;
  uint32_t ranking_users = 2000;
  std::string checkpoint_dir;  // empty: no checkpoints
  bool resume = false;
  // Keras' ModelCheckpoint(save_best_only): write the checkpoint only after
  // an epoch that improves `checkpoint_monitor`.
  bool save_best_only = false;
  std::string checkpoint_monitor = "val_loss";
  // callbacks.early_stopping (Keras' EarlyStopping); patience 0 with
  // early_stopping false: off.
  bool early_stopping = false;
  std::string early_stopping_monitor = "val_loss";
  uint32_t early_stopping_patience = 0;
  double early_stopping_min_delta = 0;
  bool early_stopping_restore_best = false;
  // callbacks.terminate_on_nan: a NaN or infinite loss ends the run (exit
  // 3) before the epoch's checkpoint, so the last one stays good.
  bool terminate_on_nan = true;
  // callbacks.csv_logger: a line per epoch (Keras' CSVLogger).
  std::string csv_logger_filename;
  bool csv_append = false;
  // tensorboard: event files under DIR/train and DIR/validation; batch
  // scalars every update_freq steps (0: epoch scalars only).
  std::string tensorboard_dir;
  uint32_t tensorboard_update_freq = 0;
  // trace: a Chrome/Perfetto trace of every step, written at the end.
  std::string trace_file;
  std::string retrace_dir;  // --retrace: the initial weights and the batches, for another framework
  // The longest launch before the run fails.
  double launch_timeout_s = std::chrono::duration<double>(TrainerConfig().launch_timeout).count();
  // Under mpirun: the longest wait for another process before the job
  // ends with an error naming the silent rank(s).
  double mpi_timeout_s = 120;
};

// One key of the schema as people and command lines see it; the table of
// keys (the run library's own) also reads, writes and checks each.
struct ConfigKey {
  std::string key;     // dotted path in the file: "train.epochs"
  std::string flag;    // "--epochs"; empty: file only
  std::string type;    // for people: "integer", "number", "text", ...
  std::string values;  // the allowed values for people: ">= 1", "fast, hls"; empty: any
  std::string help;
  bool job_wide = true;      // every process of a job must have the same value
  bool switch_flag = false;  // the flag takes no value and sets true
  // A section's switch (callbacks.early_stopping): on when the section is
  // in the file; the section's own keys are fields of their own.
  bool section_switch = false;
};

// Every key, in the order of the file's sections.
std::vector<const ConfigKey*> config_keys();
// Sets the key (one of config_keys()) from a flag's text; errors name the
// flag and the key.
Status set_config_key(const ConfigKey& key, const std::string& text, RunConfig& config);
// The key's value in `config` as one line of YAML ("[256, 128]", "adam").
std::string config_key_text(const ConfigKey& key, const RunConfig& config);
// The whole effective config as a YAML file that reads back to it.
std::string config_yaml(const RunConfig& config);
// The Markdown reference of every key (docs/config.md).
std::string config_reference();

// Fills `config` from a YAML file (the keys of config_keys()). Unknown
// keys and values of the wrong type are errors that name the file and the
// field ("train.epochs").
Status load_run_config(const std::string& path, RunConfig& config);
// The same from a YAML (or JSON) document in memory; errors start with
// `source` ("config" for a Python dict).
Status parse_run_config(const std::string& text, const std::string& source, RunConfig& config);

// Checks each field's range and the rules between fields; errors name the
// field and quote the value.
Status validate_run_config(const RunConfig& config);

// The settings every process of an mpirun job must share, as (key, value
// as text): the schema's job-wide fields. The others a process may choose
// for itself (its board, compute units, reader threads, where rank 0
// writes logs and traces); the replica counts are compared separately.
std::vector<std::pair<std::string, std::string>> job_settings(const RunConfig& config);

// The trainer's settings for `model`: the optimizer and its schedule (a
// cosine decay of decay_steps 0 spans the run after its warmup:
// `batches_per_epoch` of each epoch, or steps_per_epoch), the global
// batch, the seed, steps_per_execution and the launch timeout.
Result<TrainerConfig> trainer_settings(const RunConfig& config, const ModelSpec& model,
                                       uint64_t batches_per_epoch);

// "256,128": numbers joined by `separator`.
std::string join(const std::vector<uint32_t>& values, const char* separator);

// data.format tfrecord: the schema of data.features (errors name
// data.features), and which features feed the model.
Result<ExampleSchema> example_schema(const RunConfig& config);
ExampleColumns example_columns(const RunConfig& config);
// data.compression, parsed (the schema allows only its names; anything else
// is an error naming the key, never a silent default).
Result<Compression> data_compression(const RunConfig& config);

// The compute units `devices` selects; auto means `available` of them. An
// elastic device (sw_emu) creates as many as asked for, and `available` is
// the cores this process may use; otherwise the device has `available`
// units, and more is an error.
Result<std::vector<uint32_t>> select_units(const std::string& devices, bool elastic, uint32_t available);

}  // namespace systole
