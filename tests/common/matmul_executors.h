// SPDX-License-Identifier: Apache-2.0
// MatmulExecutors for tests: exact arithmetic (for finite-difference
// checks of the layers' backward passes), and the device's numerics through
// tests/reference (the second implementation of NUMERICS.md), tiled exactly
// as the device tiles, to check the device path bit for bit.
#pragma once

#include <map>
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

// ReferenceMatmul that keeps tensors "on the card" in memory of its own:
// what a call leaves with c_on_card is stored here and not in c (in the
// tensor held there when one holds c's range), an operand on the card is
// read from here (an error when it was never left), views read their
// tensor's blocks transposed, and the ReLU mask runs here. Counts what the
// layers leave and read, to check which tensors a model keeps on the card.
class CardKeepingMatmul final : public MatmulExecutor {
 public:
  explicit CardKeepingMatmul(const DeviceInfo& device) : reference_(device) {}
  Status run(const std::vector<MatmulCall>& calls) override;
  using MatmulExecutor::run;
  uint64_t launches() const override { return reference_.launches(); }
  uint32_t k_block() const override { return reference_.k_block(); }
  uint32_t k_tile() const override { return reference_.k_tile(); }
  bool keeps_activations() const override { return true; }
  Status sum(const SumCall& call) override;
  Status relu_mask_on_card(const float* gradient, const float* output, float* masked,
                           std::size_t count) override;
  Status hold_on_card(const float* key, std::size_t count) override;
  Status view_on_card(const float* view, const float* key, std::size_t count, uint32_t rows,
                      uint32_t cols) override;

  uint32_t results_left = 0;   // calls with c_on_card
  uint32_t operands_read = 0;  // operands with a_on_card or b_on_card
  uint32_t masks = 0;          // relu_mask_on_card calls
  uint32_t sums_read = 0;      // sums of tensors on the card
  uint32_t views = 0;          // view_on_card calls

 private:
  struct Kept {
    std::size_t count = 0;
    std::vector<float> values;  // none in a view
    const float* of = nullptr;  // a view: of's blocks of rows x cols, transposed
    uint32_t rows = 0, cols = 0;
  };
  // The tensor or view whose range holds [p, p + count), and p's offset in
  // it.
  Result<std::pair<const Kept*, std::size_t>> find(const float* p, std::size_t count) const;
  // Values [p, p + count) as the card holds them, a view's read through
  // its transposition.
  Result<std::vector<float>> values(const float* p, std::size_t count) const;
  ReferenceMatmul reference_;
  std::map<const float*, Kept> tensors_;
};

}  // namespace systole::testing
