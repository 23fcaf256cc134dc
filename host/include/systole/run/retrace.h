// SPDX-License-Identifier: Apache-2.0
// The retrace dump (the config's `retrace`, accel_train's --retrace DIR):
// what another framework needs to retrace a run step for step
// (bench/train_reference.py does, in PyTorch):
//   DIR/initial.safetensors   the weights before the first step, under the
//                             model's state_dict() names (with the model
//                             description in its metadata)
//   DIR/train_inputs.npy      every global batch fit trained on, in order,
//   DIR/train_labels.npy      as the model sees it: float32
//                             [steps x global_batch, example shape...] and
//                             [steps x global_batch(, label_width)]
//   DIR/validation_*.npy, DIR/test_*.npy   those sets (when given)
// The batches are held in memory until the run ends. One process only.
#pragma once

#include <string>
#include <vector>

#include "systole/dataset.h"
#include "systole/fit.h"
#include "systole/trainer.h"

namespace systole {

// Passes another source's batches through, keeping a copy of each.
class RetraceSource final : public BatchSource {
 public:
  explicit RetraceSource(BatchSource& inner) : inner_(inner) {}
  uint64_t batches_per_epoch() const override { return inner_.batches_per_epoch(); }
  Status start_epoch(uint32_t epoch) override { return inner_.start_epoch(epoch); }
  Result<bool> next(Batch& batch) override;
  bool process_share() const override { return inner_.process_share(); }
  uint64_t skipped() const override { return inner_.skipped(); }
  std::string shortfall() const override { return inner_.shortfall(); }

  // What it passed on: the examples, one after another.
  const Dataset& batches() const { return batches_; }
  void set_shape(const std::vector<uint32_t>& shape) { batches_.shape = shape; }

 private:
  BatchSource& inner_;
  Dataset batches_;
};

// Before training: makes DIR (an error names it when it cannot be made or
// written) and writes DIR/initial.safetensors.
Status start_retrace(const std::string& dir, const Trainer& trainer);
// After training: the batches and the evaluation sets, each file whole or
// not at all.
Status finish_retrace(const std::string& dir, const Dataset& batches, const Dataset& validation,
                      const Dataset& test);

}  // namespace systole
