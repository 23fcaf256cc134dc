// SPDX-License-Identifier: Apache-2.0
#include "infer.h"

#include <cstdio>

#include "npy_matrix.h"
#include "run_report.h"
#include "systole/fit.h"
#include "systole/mpi_process_group.h"
#include "systole/output_file.h"
#include "systole/run/data.h"
#include "systole/run/device.h"
#include "systole/training_checkpoint.h"

#include <xtensor/xadapt.hpp>
#include <xtensor/xnpy.hpp>

namespace systole {
namespace {

// Reads a float32 .npy of examples; the first dimension counts them, the
// rest must hold `features` values.
Result<std::vector<float>> read_examples(const std::string& path, std::size_t features, uint32_t& count) {
  auto array = tools::read_npy(path);
  if (!array.ok()) return array.status();
  if (array->shape[0] > (1u << 30) || array->values.size() != array->shape[0] * features)
    return Status(StatusCode::kInvalidArgument, path + ": expected N examples of " +
                                                    std::to_string(features) + " values each, got " +
                                                    std::to_string(array->values.size()) + " values in " +
                                                    std::to_string(array->shape[0]) + " rows");
  count = uint32_t(array->shape[0]);
  return std::move(array->values);
}

}  // namespace

// evaluate and predict: the model and its weights from a checkpoint.
int infer(Mode mode, const RunConfig& config, const InferOptions& options) {
  auto fail = [](const Status& status) {
    std::fprintf(stderr, "accel_train: %s\n", status.to_string().c_str());
    return 2;
  };
  if (Status status = validate_run_config(config); !status.ok()) return fail(status);
  if (started_by_mpi_launcher())
    return fail(
        Status(StatusCode::kInvalidArgument, "evaluate and predict run in one process, not under mpirun"));
  if (options.checkpoint.empty()) return fail(Status(StatusCode::kInvalidArgument, "--checkpoint: required"));
  if (mode == Mode::kPredict && (options.input.empty() || options.output.empty()))
    return fail(Status(StatusCode::kInvalidArgument, "predict needs --input X.npy and --output Y.npy"));
  if (mode == Mode::kPredict) {
    // Where the predictions go is checked before any work: a missing
    // directory or a directory's name fails now, not after the model ran.
    auto probe = OutputFile::create(options.output);
    if (!probe.ok()) return fail(Status(probe.status().code(), "--output: " + probe.status().message()));
  }
  auto checkpoint = read_safetensors(options.checkpoint);
  if (!checkpoint.ok()) return fail(checkpoint.status());
  const auto description = checkpoint->metadata.find("model");
  if (description == checkpoint->metadata.end())
    return fail(Status(
        StatusCode::kInvalidArgument,
        options.checkpoint + ": no model description (written before format " + kCheckpointFormat + ")"));
  auto spec = ModelSpec::from_json(description->second);
  if (!spec.ok())
    return fail(Status(spec.status().code(), options.checkpoint + ": " + spec.status().message()));
  auto array = parse_array_shape(config.array);
  if (!array.ok()) return fail(Status(array.status().code(), "array: " + array.status().message()));
  auto opened = open_device(config, *array, nullptr);
  if (!opened.ok()) return fail(opened.status());
  TrainerConfig trainer_config;
  trainer_config.model = *spec;
  trainer_config.global_batch = config.global_batch;
  trainer_config.steps_per_execution = config.steps_per_execution;
  trainer_config.launch_timeout = std::chrono::milliseconds(int64_t(config.launch_timeout_s * 1000));
  // The model is the checkpoint's: what is wrong with it (an unknown layer
  // type, a bad argument) is the file's.
  auto trainer = Trainer::create(opened->device, opened->units, trainer_config);
  if (!trainer.ok())
    return fail(Status(trainer.status().code(), options.checkpoint + ": " + trainer.status().message()));
  if (Status loaded = restore_model(*checkpoint, options.checkpoint, **trainer); !loaded.ok())
    return fail(loaded);

  if (mode == Mode::kEvaluate) {
    auto test = load_test_set(config, spec->classes);
    if (!test.ok()) return fail(test.status());
    if (test->features != shape_elements(spec->input_shape)) {
      std::string files = config.data_dir;
      if (config.data_format != "idx") {
        files.clear();
        for (const std::string& pattern : config.test_files) files += (files.empty() ? "" : ", ") + pattern;
      }
      return fail(Status(StatusCode::kInvalidArgument, "the test examples of " + files + " are " +
                                                           shape_text(test->shape) + ", the model of " +
                                                           options.checkpoint + " takes " +
                                                           shape_text(spec->input_shape)));
    }
    auto tested = evaluate(**trainer, *test);
    if (!tested.ok()) return fail(tested.status());
    print_test_logs(*tested);
    return 0;
  }
  uint32_t count = 0;
  auto inputs = read_examples(options.input, shape_elements(spec->input_shape), count);
  if (!inputs.ok()) return fail(inputs.status());
  auto logits = predict(**trainer, inputs->data(), count);
  if (!logits.ok()) return fail(logits.status());
  // Written beside the output and renamed over it: no half-written file.
  std::vector<std::size_t> shape{count};  // [count, classes] or [count, positions, classes]
  for (uint32_t d : (*trainer)->model().logits_shape()) shape.push_back(d);
  const std::string npy = xt::dump_npy(xt::adapt(*logits, shape));
  if (Status written = write_file(options.output, npy); !written.ok()) return fail(written);
  std::printf("predict: %u examples -> %s (%s logits each)\n", count, options.output.c_str(),
              shape_text((*trainer)->model().logits_shape()).c_str());
  return 0;
}

}  // namespace systole
