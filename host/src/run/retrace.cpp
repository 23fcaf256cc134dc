// SPDX-License-Identifier: Apache-2.0
#include "systole/run/retrace.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <xtensor/xadapt.hpp>
#include <xtensor/xnpy.hpp>

#include "systole/output_file.h"
#include "systole/training_checkpoint.h"

namespace systole {
namespace {

Status write_npy(const std::string& path, const std::vector<float>& values, std::vector<std::size_t> shape) {
  return write_file(path, xt::dump_npy(xt::adapt(values, shape)));
}

// DIR/NAME_inputs.npy and DIR/NAME_labels.npy.
Status write_set(const std::string& dir, const std::string& name, const Dataset& set) {
  std::vector<std::size_t> shape{set.examples};
  shape.insert(shape.end(), set.shape.begin(), set.shape.end());
  if (set.shape.empty()) shape.push_back(set.features);
  SYSTOLE_RETURN_IF_ERROR(write_npy(dir + "/" + name + "_inputs.npy", set.values, shape));
  std::vector<std::size_t> labels{set.examples};
  if (set.label_width > 1) labels.push_back(set.label_width);
  return write_npy(dir + "/" + name + "_labels.npy", set.labels, labels);
}

}  // namespace

Result<bool> RetraceSource::next(Batch& batch) {
  auto more = inner_.next(batch);
  if (!more.ok() || !*more) return more;
  const std::size_t features = batch.values.size() / batch.size;
  if (batches_.examples == 0) {
    batches_.features = uint32_t(features);
    batches_.label_width = batch.label_width;
  }
  batches_.values.insert(batches_.values.end(), batch.values.begin(),
                         batch.values.begin() + std::ptrdiff_t(features * batch.size));
  batches_.labels.insert(batches_.labels.end(), batch.labels.begin(),
                         batch.labels.begin() + std::ptrdiff_t(std::size_t(batch.size) * batch.label_width));
  batches_.examples += batch.size;
  return more;
}

Status start_retrace(const std::string& dir, const Trainer& trainer) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    return Status(StatusCode::kUnavailable,
                  "retrace: " + dir + ": cannot create the directory: " + std::strerror(errno));
  struct stat info;
  if (::stat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode))
    return Status(StatusCode::kInvalidArgument, "retrace: " + dir + ": not a directory");
  Status written = write_safetensors(dir + "/initial.safetensors", make_model_file(trainer));
  if (!written.ok()) return Status(written.code(), "retrace: " + written.message());
  return ok_status();
}

Status finish_retrace(const std::string& dir, const Dataset& batches, const Dataset& validation,
                      const Dataset& test) {
  SYSTOLE_RETURN_IF_ERROR(write_set(dir, "train", batches));
  if (validation.examples > 0) SYSTOLE_RETURN_IF_ERROR(write_set(dir, "validation", validation));
  if (test.examples > 0) SYSTOLE_RETURN_IF_ERROR(write_set(dir, "test", test));
  return ok_status();
}

}  // namespace systole
