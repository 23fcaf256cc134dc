// SPDX-License-Identifier: Apache-2.0
// The test reference: hw/spec/NUMERICS.md implemented a second time, from
// the text and not from numerics.h. Values are decoded into sign, exponent and
// significand fields and computed exactly in double precision; nothing here
// relies on the host's fp32 rounding or its subnormal handling.
#pragma once

#include <cstdint>
#include <vector>

#include "systole/descriptor.h"

namespace systole::reference {

// bf16 bits -> fp32 bits: subnormal -> signed zero, else exact widening.
uint32_t bf16_to_f32(uint16_t bf16);
// fp32 bits -> bf16 bits: NaN -> 0x7FC0, subnormal -> signed zero, else round
// to the nearest bf16, ties to the even pattern, past the largest -> Inf.
uint16_t f32_to_bf16(uint32_t f32);
// Exact bf16 product as fp32 bits, with the contract's overflow, underflow
// and NaN rules.
uint32_t mul(uint16_t a, uint16_t b);
// fp32 sum of two canonical fp32 values, as fp32 bits.
uint32_t add(uint32_t a, uint32_t b);
// Input canonicalisation of an fp32 value read from memory.
uint32_t canonical(uint32_t f32);
uint32_t relu(uint32_t f32);

// The vector engine's fp32 operations on canonical fp32 values: the exact
// result rounded to nearest even to 24 bits, then a zero of its sign if
// that is below 2^-126 (tiny after rounding), past the largest finite Inf.
// Integer significands here: no double rounding, no host fp32 arithmetic.
uint32_t fmul(uint32_t a, uint32_t b);
uint32_t fsub(uint32_t a, uint32_t b);
uint32_t fdiv(uint32_t a, uint32_t b);
uint32_t fsqrt(uint32_t a);

// One vector descriptor, against `memory` (ports at base 0).
void vector(const spec::VectorDescriptor& d, std::vector<uint8_t>& memory);

// One GEMM descriptor executed in the order of NUMERICS.md, on an array with
// `rows` PE rows, against `memory` (byte-addressed, ports at base 0).
void gemm(const spec::GemmDescriptor& d, uint32_t rows, std::vector<uint8_t>& memory);

}  // namespace systole::reference
