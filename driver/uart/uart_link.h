// SPDX-License-Identifier: Apache-2.0
// The host side of the UART link's framing (hw/spec/systole/uart_link.h):
// request frames to send and response frames to check, with their CRC.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "systole/status.h"
#include "systole/uart_link.h"

namespace systole::uart {

// CRC-16/CCITT-FALSE of `bytes` (the link's checksum).
uint16_t crc16(const uint8_t* bytes, std::size_t size);

// A request frame. Writes carry `words`; reads carry only its count.
std::vector<uint8_t> write_request(spec::uart::Command command, uint32_t address,
                                   const std::vector<uint32_t>& words);
std::vector<uint8_t> read_request(spec::uart::Command command, uint32_t address, uint32_t words);

bool is_read(spec::uart::Command command);

// A response's length in bytes, known once its first two bytes (sync and
// status) are in: data follows only an OK answer to a read.
std::size_t response_bytes(uint8_t status, spec::uart::Command command, uint32_t words);

struct Response {
  spec::uart::Status status = spec::uart::Status::kOk;
  std::vector<uint32_t> words;  // a read's data
};

// Checks and decodes a whole response frame; an error names what is wrong
// and at which byte.
Result<Response> decode_response(const std::vector<uint8_t>& frame, spec::uart::Command command,
                                 uint32_t words);

const char* status_name(spec::uart::Status status);

}  // namespace systole::uart
