// One model replica on one compute unit: the model's buffers in device
// memory and the command lists of a training step. Every matrix product of
// the forward and backward pass runs on the array; the host does what the
// array cannot (softmax, ReLU masks, transposes) in between.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "systole/driver.h"
#include "systole/gemm_plan.h"
#include "systole/mlp.h"

namespace systole {

struct StepResult {
  double loss_sum = 0;   // sum of the examples' cross-entropy losses
  uint32_t correct = 0;  // examples whose arg-max logit is the label
  uint32_t examples = 0;
};

class Replica {
 public:
  // Buffers for batches of up to `max_batch` examples on `unit` of `device`.
  static Result<std::unique_ptr<Replica>> create(Device device, uint32_t unit,
                                                 const MlpShape& shape, uint32_t max_batch);

  // Uploads fp32 master parameters (flattened as init_parameters lays them out) as bf16
  // weights, their transposes, and fp32 biases.
  Status load_parameters(const std::vector<float>& flat);

  // Forward and backward over `count` examples. `gradients` receives the
  // gradient of (sum of the examples' losses) / loss_divisor, flattened.
  Status train_step(const float* images, const uint8_t* labels, uint32_t count,
                    float loss_divisor, std::vector<float>& gradients, StepResult& result);

  // Forward only: loss and accuracy over `count` examples.
  Status evaluate(const float* images, const uint8_t* labels, uint32_t count, StepResult& result);

  // Launches (command lists) per training step, for the record.
  uint32_t launches_per_step() const;

 private:
  // A row-major matrix in its own device buffer.
  struct Matrix {
    Buffer buffer;
    uint32_t rows = 0, cols = 0, element_bytes = 0;
    DeviceMatrix at() const { return {buffer.address(), cols}; }
  };

  Replica() = default;
  Result<Matrix> allocate(uint32_t rows, uint32_t cols, uint32_t element_bytes);
  Status upload(Matrix& matrix, const void* data, uint32_t rows);
  Status download(Matrix& matrix, void* data, uint32_t rows);
  // Plans `problem` and appends its descriptors to the pending list.
  Status add(const GemmProblem& problem);
  // Runs and clears the pending list.
  Status launch();
  Status forward(const float* images, uint32_t count, bool keep_activations);
  void score(const uint8_t* labels, uint32_t count, float loss_divisor, bool gradients,
             StepResult& result);

  Device device_;
  uint32_t unit_ = 0;
  MlpShape shape_;
  std::vector<uint32_t> widths_;
  uint32_t max_batch_ = 0;
  uint32_t allocations_ = 0;

  std::vector<Matrix> weights_, weights_t_, biases_;
  std::vector<Matrix> activations_;   // bf16 inputs of each layer
  std::vector<Matrix> pre_activations_;  // fp32, when a layer cannot fuse
  Matrix logits_;
  std::vector<Matrix> activations_t_, deltas_, weight_grads_, bias_grads_, input_grads_;
  Matrix ones_;
  Buffer commands_;
  std::vector<spec::GemmDescriptor> pending_;

  // Host copies of the current batch.
  std::vector<std::vector<uint16_t>> host_activations_;
  std::vector<float> host_logits_;
  std::vector<float> host_delta_top_;  // fp32 dL/dlogits
};

}  // namespace systole
