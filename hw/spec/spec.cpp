// SPDX-License-Identifier: Apache-2.0
// Out-of-line parts of the hardware spec.
#include "systole/spec.h"

namespace systole::spec {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk:
      return "ok";
    case ErrorCode::kBadMagic:
      return "bad_magic";
    case ErrorCode::kBadVersion:
      return "bad_version";
    case ErrorCode::kBadCount:
      return "bad_count";
    case ErrorCode::kBadOpcode:
      return "bad_opcode";
    case ErrorCode::kBadFlags:
      return "bad_flags";
    case ErrorCode::kBadDimension:
      return "bad_dimension";
    case ErrorCode::kBadLeadingDim:
      return "bad_leading_dim";
    case ErrorCode::kMisalignedAddress:
      return "misaligned_address";
    case ErrorCode::kAddressOutOfRange:
      return "address_out_of_range";
    case ErrorCode::kAxiError:
      return "axi_error";
  }
  return "unknown_error";
}

}  // namespace systole::spec
