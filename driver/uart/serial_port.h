// SPDX-License-Identifier: Apache-2.0
// A byte stream to a board: a serial port (termios), or in tests a
// simulated board on the other end.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "systole/status.h"

namespace systole::uart {

class SerialPort {
 public:
  virtual ~SerialPort() = default;
  virtual std::string name() const = 0;  // for messages: the device path
  virtual Status write(const uint8_t* data, std::size_t size) = 0;
  // Reads exactly `size` bytes; kTimeout when they have not all come within
  // `timeout`.
  virtual Status read(uint8_t* data, std::size_t size, std::chrono::milliseconds timeout) = 0;
  // Drops whatever has arrived unread.
  virtual void discard_input() = 0;
};

// Opens `path` raw, 8 data bits, no parity, one stop bit, at `baud` (one of
// the standard rates). The error names the path and the reason.
Result<std::unique_ptr<SerialPort>> open_serial_port(const std::string& path, uint32_t baud);

}  // namespace systole::uart
