// SPDX-License-Identifier: Apache-2.0
#include "card_unit.h"

#include <gtest/gtest.h>

namespace systole::testing::card {

MatmulCall product(uint32_t m, uint32_t n, uint32_t k, const float* a, const float* b, float* c) {
  MatmulCall call;
  call.m = m;
  call.n = n;
  call.k = k;
  call.a = a;
  call.b = b;
  call.c = c;
  return call;
}

std::vector<float> normal_values(std::mt19937& rng, std::size_t count) {
  std::normal_distribution<float> normal;
  std::vector<float> v(count);
  for (float& x : v) x = normal(rng);
  return v;
}

ResidentUnit resident_unit(const std::vector<float>& values, const std::vector<float>& gradients) {
  DeviceOptions options;
  options.array_rows = options.array_cols = 16;
  options.hbm_banks = 8;
  options.bank_bytes = 64 << 20;
  options.perf.board = "u55c";
  ResidentUnit unit;
  unit.device = Device::open("perf", 0, options).value();
  unit.matmul = DeviceMatmul::create(unit.device, 0, std::chrono::seconds(60)).value();
  for (auto [tensor, operand] :
       {std::pair{&unit.resident.values, spec::Operand::kC}, {&unit.resident.gradients, spec::Operand::kA}}) {
    Buffer buffer = unit.device.allocate(values.size() * 4, spec::operand_bank(0, operand, 8)).value();
    *tensor = DeviceTensor::over(std::move(buffer), 0, values.size()).value();
  }
  EXPECT_TRUE(unit.resident.values.write(values.data()).ok());
  EXPECT_TRUE(unit.resident.gradients.write(gradients.data()).ok());
  return unit;
}

std::unique_ptr<DeviceMatmul> sw_emu_unit(bool vector_engine) {
  DeviceOptions options;
  options.array_rows = options.array_cols = 16;
  if (!vector_engine) options.sw_emu_features = 0;
  return DeviceMatmul::create(Device::open("sw_emu", 0, options).value(), 0, std::chrono::seconds(60))
      .value();
}

}  // namespace systole::testing::card
