// SPDX-License-Identifier: Apache-2.0
// Out-of-line parts of the hardware spec.
#include "systole/spec.h"

#include "systole/descriptor.h"

namespace systole::spec {

const char* error_code_name(ErrorCode code) {
  switch (code) {
#define SYSTOLE_ERROR_NAME(Name, name, value) \
  case ErrorCode::k##Name:                    \
    return #name;
    SYSTOLE_ERROR_CODES(SYSTOLE_ERROR_NAME)
#undef SYSTOLE_ERROR_NAME
  }
  return "unknown_error";
}

const char* opcode_name(uint8_t opcode) {
  switch (opcode) {
#define SYSTOLE_OPCODE_NAME(Name, name, value) \
  case value:                                  \
    return #name;
    SYSTOLE_OPCODES(SYSTOLE_OPCODE_NAME)
#undef SYSTOLE_OPCODE_NAME
  }
  return nullptr;
}

}  // namespace systole::spec
