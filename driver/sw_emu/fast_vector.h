// SPDX-License-Identifier: Apache-2.0
// The fast vector engine of the sw_emu backend: a vector descriptor worked
// straight on device memory, with the bits and the counters of the HLS
// kernel's engine (hw/spec/NUMERICS.md, "The vector engine").
#pragma once

#include <cstdint>

#include "systole/descriptor.h"
#include "systole/spec.h"

namespace systole::sw_emu {

// One validated descriptor; x lies at a_port + x_addr, y, z and w at
// c_port + their addresses (device memory is host memory in sw_emu).
void fast_vector(const spec::VectorDescriptor& d, const uint8_t* a_port, uint8_t* c_port,
                 spec::PerfCounters& counters);

}  // namespace systole::sw_emu
