// SPDX-License-Identifier: Apache-2.0
// What the tests of products on a modelled card share: a call, random
// operands, and a unit that keeps parameters on the card.
#pragma once

#include <memory>
#include <random>
#include <vector>

#include "systole/driver.h"
#include "systole/matmul.h"

namespace systole::testing::card {

// C (m x n) = A B (k deep), stored as given.
MatmulCall product(uint32_t m, uint32_t n, uint32_t k, const float* a, const float* b, float* c);

// `count` values drawn from the standard normal distribution.
std::vector<float> normal_values(std::mt19937& rng, std::size_t count);

// One unit of 16 x 16 on a modelled U55C, with `values` (and their
// `gradients`) uploaded to the card, not yet kept there.
struct ResidentUnit {
  Device device;
  std::unique_ptr<DeviceMatmul> matmul;
  ResidentParameters resident;
  // Values [offset, offset + count) of the parameters on the card, and of
  // their gradients, as a layer names them (ParameterStore::card_values).
  DeviceTensor values(std::size_t offset, std::size_t count) const {
    return resident.values.part(offset, count).value();
  }
  DeviceTensor gradients(std::size_t offset, std::size_t count) const {
    return resident.gradients.part(offset, count).value();
  }
};
ResidentUnit resident_unit(const std::vector<float>& values, const std::vector<float>& gradients);

// Unit 0 of a 16 x 16 sw_emu device (which it keeps open), its kernel with
// or without the vector engine.
std::unique_ptr<DeviceMatmul> sw_emu_unit(bool vector_engine = true);

}  // namespace systole::testing::card
