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
  ResidentParameters& resident = unit.resident;
  resident.values = values.data();
  resident.gradients = gradients.data();
  resident.count = values.size();
  resident.values_buffer =
      unit.device.allocate(values.size() * 4, spec::operand_bank(0, spec::Operand::kC, 8)).value();
  resident.gradient_buffer =
      unit.device.allocate(values.size() * 4, spec::operand_bank(0, spec::Operand::kA, 8)).value();
  EXPECT_TRUE(resident.values_buffer.write(values.data(), values.size() * 4).ok());
  EXPECT_TRUE(resident.values_buffer.sync(Buffer::SyncDirection::kToDevice).ok());
  return unit;
}

}  // namespace systole::testing::card
