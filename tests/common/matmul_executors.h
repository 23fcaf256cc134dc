// SPDX-License-Identifier: Apache-2.0
// MatmulExecutors for tests: exact arithmetic (for finite-difference
// checks of the layers' backward passes), and the device's numerics through
// tests/reference (the second implementation of NUMERICS.md), tiled exactly
// as the device tiles, to check the device path bit for bit.
#pragma once

#include <set>
#include <utility>
#include <vector>

#include "systole/driver.h"
#include "systole/matmul.h"

namespace systole::testing {

// op(A) op(B) in double, rounded once to fp32; no bf16 anywhere.
class ExactMatmul final : public MatmulExecutor {
 public:
  Status run(const std::vector<MatmulCall>& calls) override;
  using MatmulExecutor::run;
  uint64_t launches() const override { return launches_; }
  uint32_t k_block() const override { return 0; }

 private:
  uint64_t launches_ = 0;
};

// Each call planned with plan_gemm for `device` and every descriptor run by
// reference::gemm: the bits the device must produce.
class ReferenceMatmul final : public MatmulExecutor {
 public:
  explicit ReferenceMatmul(const DeviceInfo& device) : device_(device) {}
  Status run(const std::vector<MatmulCall>& calls) override;
  using MatmulExecutor::run;
  uint64_t launches() const override { return launches_; }
  uint32_t k_block() const override { return device_.max_k; }
  uint32_t k_tile() const override { return device_.shape.rows; }

 private:
  DeviceInfo device_;
  uint64_t launches_ = 0;
};

// ReferenceMatmul that keeps tensors "on the card": it makes them in
// `device`'s memory (allocate), an operand on the card is read from there,
// a result left there (a C on the card) is written there and not to the host, views
// read their tensor's blocks transposed, and the ReLU mask runs here.
// Counts what the layers leave and read, to check which tensors a model
// keeps on the card.
class CardKeepingMatmul final : public MatmulExecutor {
 public:
  explicit CardKeepingMatmul(Device device) : device_(std::move(device)), reference_(device_.info()) {}
  Status run(const std::vector<MatmulCall>& calls) override;
  using MatmulExecutor::run;
  uint64_t launches() const override { return reference_.launches(); }
  uint32_t k_block() const override { return reference_.k_block(); }
  uint32_t k_tile() const override { return reference_.k_tile(); }
  bool supports(Feature feature) const override { return feature == Feature::kCardTensors; }
  bool keeps_activations() const override { return true; }
  Result<DeviceTensor> allocate(std::size_t count) override;
  Status sum(const SumCall& call) override;

  uint32_t tensors = 0;        // allocate calls
  uint32_t results_left = 0;   // calls whose C is on the card
  uint32_t operands_read = 0;  // operands A or B on the card
  uint32_t masks = 0;          // relu_mask_on_card calls
  uint32_t sums_read = 0;      // sums of tensors on the card
  // Views whose blocks read transposed (a Flatten's) that calls read.
  std::size_t views() const { return views_.size(); }

 private:
  Status relu_mask_on_card(const DeviceTensor& gradient, const DeviceTensor& output,
                           const DeviceTensor& masked, std::size_t count) override;
  // The first `count` values of x as a product reads them (a view's through
  // its blocks' transposition).
  Result<std::vector<float>> values(const DeviceTensor& x, std::size_t count);
  Device device_;
  ReferenceMatmul reference_;
  std::set<std::pair<uint64_t, uint32_t>> views_;  // tensor id, block rows
};

}  // namespace systole::testing
