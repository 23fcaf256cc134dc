// SPDX-License-Identifier: Apache-2.0
// Writes xclbin files (XRT's axlf container) that describe a Systole
// kernel: IP_LAYOUT (compute units), MEM_TOPOLOGY (HBM banks),
// CONNECTIVITY (argument -> bank) and EMBEDDED_METADATA (the kernel's
// arguments), as v++ --link would, but without a bitstream. Debian ships
// XRT's xclbinutil without its binary, so the tests make their own; XRT
// itself (xrt::xclbin) reads them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace systole::testing {

struct XclbinArg {
  std::string name;
  uint32_t offset;
  uint32_t bytes;
  bool memory;
};

struct XclbinDescription {
  std::string kernel = "systole_rtl";  // spec::kRtlKernelName
  std::vector<XclbinArg> args;         // in argument-index order
  uint32_t compute_units = 1;
  uint32_t hbm_banks = 32;
  std::string memory_kind = "HBM";  // or "DDR": a platform without HBM
  uint64_t bank_bytes = 256ull << 20;
  // banks[cu][memory argument] lists the HBM banks that argument reaches.
  std::vector<std::vector<std::vector<uint32_t>>> banks;
};

// The arguments of spec::kKernelArgs with their register-map offsets.
std::vector<XclbinArg> spec_kernel_args();

// Each compute unit u's memory arguments reach HBM[4u .. 4u+3], as
// Makefile.fpga connects them.
XclbinDescription systole_xclbin(uint32_t compute_units);

std::vector<char> make_xclbin(const XclbinDescription& description);
bool write_file(const std::string& path, const std::vector<char>& bytes);

}  // namespace systole::testing
