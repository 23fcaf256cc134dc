// SPDX-License-Identifier: Apache-2.0
// Runs a random workload through each model of the kernel and returns the
// memory image it leaves, so tests can compare models byte for byte.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/random_workload.h"
#include "fast_gemm.h"
#include "systole/driver.h"

namespace systole::testing {

struct Outcome {
  std::vector<uint8_t> memory;  // the workload's image after the run
  Status status;                // what Run::wait returned
  spec::ErrorCode error = spec::ErrorCode::kOk;
  uint32_t error_index = 0;
  spec::PerfCounters counters;
};

// Through the driver on a sw_emu device with the given engine. The
// descriptors are run as one command list.
Outcome run_sw_emu(const Workload& workload, spec::ArrayShape shape, EmuEngine engine, uint32_t threads = 1);

// The same, with the command list given as raw bytes (for malformed lists);
// descriptor addresses in `list` must already point into the data buffer,
// which is placed at device address 0.
Outcome run_sw_emu_list(const std::vector<uint8_t>& memory, const std::vector<uint8_t>& list,
                        spec::ArrayShape shape, EmuEngine engine);

// Through any opened device: `memory` is placed at device address 0 (the
// device's first allocation in bank 0), `list` in bank 1 (bank 0 on a
// one-bank device).
Outcome run_on_device(Device& device, const std::vector<uint8_t>& memory, const std::vector<uint8_t>& list);

// tests/reference, descriptor after descriptor.
Outcome run_reference(const Workload& workload, uint32_t rows);

// The fast path called directly with one instruction set and loop order
// (the device picks them itself), on `threads` threads. The caller checks
// sw_emu::fast_gemm_supports(isa): an ISA this CPU lacks runs the portable
// code.
Outcome run_fast(const Workload& workload, uint32_t rows, sw_emu::FastGemmIsa isa,
                 sw_emu::FastGemmOrder order, uint32_t threads);

// "" when equal, else where and how the images differ.
std::string first_difference(const std::vector<uint8_t>& expected, const std::vector<uint8_t>& actual);

}  // namespace systole::testing
