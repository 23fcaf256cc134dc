// SPDX-License-Identifier: Apache-2.0
// MatmulExecutors for tests: exact arithmetic (for finite-difference
// checks of the layers' backward passes), and the device's numerics through
// tests/reference (the second implementation of NUMERICS.md), tiled exactly
// as the device tiles, to check the device path bit for bit.
#pragma once

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

 private:
  DeviceInfo device_;
  uint64_t launches_ = 0;
};

}  // namespace systole::testing
