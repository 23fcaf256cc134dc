// SPDX-License-Identifier: Apache-2.0
// Random vector-engine workloads for the tests of every model of the
// engine (sw_emu's two engines, the RTL kernel): valid descriptors of each
// opcode over a data image of awkward fp32 values, and their command list.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "systole/descriptor.h"

namespace systole::testing {

inline constexpr spec::Opcode kVectorOpcodes[] = {
    spec::Opcode::kAxpby, spec::Opcode::kMul, spec::Opcode::kRelu, spec::Opcode::kReluGrad,
    spec::Opcode::kSum,   spec::Opcode::kSgd, spec::Opcode::kAdam, spec::Opcode::kToBf16};

// A command list of vector descriptors over a data image at address 0.
std::vector<uint8_t> encode_list(const std::vector<spec::VectorDescriptor>& descriptors);

// A random, valid descriptor of opcode `op` whose operands lie in four
// separate regions of `bytes` bytes (at addresses that are rarely multiples
// of a beat), some of its outputs in place on an input. `max_n` caps the
// element count (and a sum's and to_bf16's rows stay small).
spec::VectorDescriptor random_descriptor(spec::Opcode op, std::mt19937_64& rng, uint64_t bytes,
                                         uint32_t max_n = 1031);

// `bytes` bytes of awkward fp32 values.
std::vector<uint8_t> random_image(std::mt19937_64& rng, uint64_t bytes);

}  // namespace systole::testing
