// SPDX-License-Identifier: Apache-2.0
#include "uart_link.h"

#include <boost/crc.hpp>

namespace systole::uart {
namespace {

using spec::uart::Command;

void put16(std::vector<uint8_t>& out, uint16_t value) {
  out.push_back(uint8_t(value));
  out.push_back(uint8_t(value >> 8));
}

void put32(std::vector<uint8_t>& out, uint32_t value) {
  for (int shift = 0; shift < 32; shift += 8) out.push_back(uint8_t(value >> shift));
}

std::vector<uint8_t> header(Command command, uint32_t address, uint32_t words) {
  std::vector<uint8_t> frame{spec::uart::kRequestSync, uint8_t(command)};
  put32(frame, address);
  put16(frame, uint16_t(words));
  return frame;
}

void seal(std::vector<uint8_t>& frame) { put16(frame, crc16(frame.data() + 1, frame.size() - 1)); }

}  // namespace

uint16_t crc16(const uint8_t* bytes, std::size_t size) {
  boost::crc_optimal<16, 0x1021, 0xFFFF, 0, false, false> crc;
  crc.process_bytes(bytes, size);
  return crc.checksum();
}

bool is_read(Command command) {
  return command == Command::kReadMemory || command == Command::kReadRegisters;
}

std::vector<uint8_t> write_request(Command command, uint32_t address, const std::vector<uint32_t>& words) {
  std::vector<uint8_t> frame = header(command, address, uint32_t(words.size()));
  for (uint32_t word : words) put32(frame, word);
  seal(frame);
  return frame;
}

std::vector<uint8_t> read_request(Command command, uint32_t address, uint32_t words) {
  std::vector<uint8_t> frame = header(command, address, words);
  seal(frame);
  return frame;
}

std::size_t response_bytes(uint8_t status, Command command, uint32_t words) {
  const bool data = status == uint8_t(spec::uart::Status::kOk) && is_read(command);
  return 4 + (data ? 4 * std::size_t(words) : 0);
}

Result<Response> decode_response(const std::vector<uint8_t>& frame, Command command, uint32_t words) {
  auto bad = [](const std::string& why) { return Status(StatusCode::kDeviceError, "uart response: " + why); };
  if (frame.size() < 4) return bad(std::to_string(frame.size()) + " bytes, a response has at least 4");
  if (frame[0] != spec::uart::kResponseSync)
    return bad("byte 0 is " + std::to_string(frame[0]) + ", not the sync byte " +
               std::to_string(spec::uart::kResponseSync));
  const std::size_t expected = response_bytes(frame[1], command, words);
  if (frame.size() != expected)
    return bad(std::to_string(frame.size()) + " bytes, expected " + std::to_string(expected) +
               " for status " + std::to_string(frame[1]));
  const uint16_t sent = uint16_t(frame[expected - 2] | frame[expected - 1] << 8);
  const uint16_t computed = crc16(frame.data() + 1, expected - 3);
  if (sent != computed)
    return bad("CRC at byte " + std::to_string(expected - 2) + " is " + std::to_string(sent) +
               ", the bytes give " + std::to_string(computed));
  Response response;
  response.status = spec::uart::Status(frame[1]);
  for (std::size_t i = 2; i + 2 < expected; i += 4)
    response.words.push_back(uint32_t(frame[i]) | uint32_t(frame[i + 1]) << 8 | uint32_t(frame[i + 2]) << 16 |
                             uint32_t(frame[i + 3]) << 24);
  return response;
}

const char* status_name(spec::uart::Status status) {
  switch (status) {
#define SYSTOLE_UART_STATUS_NAME(Name, name, value) \
  case spec::uart::Status::k##Name:                 \
    return #name;
    SYSTOLE_UART_STATUSES(SYSTOLE_UART_STATUS_NAME)
#undef SYSTOLE_UART_STATUS_NAME
  }
  return "unknown_status";
}

}  // namespace systole::uart
