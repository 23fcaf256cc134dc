// SPDX-License-Identifier: Apache-2.0
// Random command lists for differential tests: awkward shapes around the
// array's tile size, leading dimensions and addresses that are not
// beat-aligned, accumulate chains, every flag, and value distributions that
// reach the contract's corners. Deterministic for a seed.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "systole/descriptor.h"

namespace systole::testing {

enum class Values {
  kTypical,     // N(0, 1)-like bf16 values, some zeros
  kCancelling,  // small integers and signed zeros: exact cancellations
  kExtreme,     // all exponents, subnormals, Inf, NaN, overflow, underflow
  kNearZero,    // signed values near 2^-63: products at the bottom of fp32's
                // normal range or just under it (flushed to a signed zero),
                // whose sums cancel or flush to -0, and C of signed zeros
};

const char* values_name(Values values);

// A command list and the memory image it runs on. Descriptor addresses are
// offsets into `memory`; rebase() moves them to where the image is placed.
struct Workload {
  std::vector<uint8_t> memory;
  std::vector<spec::GemmDescriptor> descriptors;
  std::string description;  // one line per descriptor, for failure messages

  std::vector<spec::GemmDescriptor> rebased(uint64_t base) const;
};

struct WorkloadOptions {
  spec::ArrayShape shape{8, 8};
  uint32_t descriptors = 6;
  Values values = Values::kTypical;
  uint32_t max_m = 40;  // keep the HLS engine fast; some cases exceed it
  uint32_t max_n = 0;   // C's columns: 1 to this; 0 for sizes near the array's
};

Workload make_workload(uint32_t seed, const WorkloadOptions& options);

}  // namespace systole::testing
