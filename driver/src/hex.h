// SPDX-License-Identifier: Apache-2.0
// An address or register value as the driver's messages print it.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace systole::detail {

// "0x1f40".
inline std::string hex(uint64_t value) {
  char text[20];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

}  // namespace systole::detail
