// SPDX-License-Identifier: Apache-2.0
// AXI4 response codes (RRESP, BRESP), as the memory models answer them.
#pragma once

#include <cstdint>

namespace systole::sim {

enum class AxiResp : uint8_t {
  kOkay = 0,
  kExOkay = 1,  // exclusive access; the kernel makes none
  kSlvErr = 2,  // the slave failed the access
  kDecErr = 3,  // no slave at the address
};

}  // namespace systole::sim
