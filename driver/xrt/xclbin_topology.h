// SPDX-License-Identifier: Apache-2.0
// What the xrt backend needs from an xclbin: the Systole kernel's compute
// units, where each keeps its arguments (register offsets) and which HBM
// banks each memory argument reaches. Read with XRT's own parser
// (xrt::xclbin), checked against hw/spec, without a board.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "systole/status.h"

namespace systole::detail {

struct XclbinTopology {
  std::string platform;  // the platform (XSA) the xclbin was linked for
  std::string kernel;    // spec::kRtlKernelName or spec::kHlsKernelName
  struct ComputeUnit {
    std::string name;                          // "systole_rtl_1"
    std::vector<uint32_t> offsets;             // register of spec::kKernelArgs[i]
    std::vector<std::vector<uint32_t>> banks;  // per memory argument, ascending
  };
  std::vector<ComputeUnit> units;          // in the order of their names
  uint32_t hbm_banks = 0;                  // HBM[0] .. HBM[hbm_banks - 1]
  uint64_t bank_bytes = 0;                 // the smallest bank's size
  std::vector<int32_t> bank_memory_index;  // HBM[b] -> memory topology index
};

// Errors name the file and what does not match (kernel, argument, offset,
// connection).
Result<XclbinTopology> read_xclbin_topology(const std::string& path);

}  // namespace systole::detail
