// SPDX-License-Identifier: Apache-2.0
// The host link of the small boards: frames over a UART (8 data bits, no
// parity, one stop bit) that carry what the AXI4-Lite port and the DMA carry
// on an Alveo card, register reads and writes and device-memory transfers.
// The bridge (hw/rtl/systole_uart_bridge.sv) answers every request with
// one response; docs/kernel-interface.md describes the framing.
//
// Request:  kRequestSync, command, address (u32), words (u16), for writes
//           4 x words data bytes, CRC (u16). Response: kResponseSync,
//           status, for successful reads 4 x words data bytes, CRC (u16).
// Multi-byte fields are little-endian. The CRC is CRC-16/CCITT-FALSE
// (polynomial 0x1021, initial value 0xFFFF, no reflection, no final XOR)
// over every byte after the sync byte; a frame's CRC is sent low byte first.
// A write takes effect only once its CRC has checked: a bad frame changes
// nothing. A request whose header is bad (command, length, address) is
// answered at once, and the bridge then drops bytes until the line has been
// idle for kIdleBitTimes bit times; a frame cut short is dropped after the
// same idle time, unanswered.
#pragma once

#include <cstdint>

namespace systole::spec::uart {

inline constexpr uint8_t kRequestSync = 0xA5;
inline constexpr uint8_t kResponseSync = 0x5A;
inline constexpr uint32_t kHeaderBytes = 8;    // sync, command, address, words
inline constexpr uint32_t kMaxWords = 256;     // per request (1 KiB)
inline constexpr uint32_t kIdleBitTimes = 40;  // four bytes' time

// One row per command: X(Name, value, what it is, for messages).
// Addresses of register commands are register-map offsets; of memory
// commands, device-memory byte addresses. Both are multiples of 4.
#define SYSTOLE_UART_COMMANDS(X)           \
  X(WriteMemory, 1, "a memory write")      \
  X(ReadMemory, 2, "a memory read")        \
  X(WriteRegisters, 3, "a register write") \
  X(ReadRegisters, 4, "a register read")

enum class Command : uint8_t {
#define SYSTOLE_UART_COMMAND_ENUM(Name, value, what) k##Name = value,
  SYSTOLE_UART_COMMANDS(SYSTOLE_UART_COMMAND_ENUM)
#undef SYSTOLE_UART_COMMAND_ENUM
};

// One row per response status: X(Name, name, value).
#define SYSTOLE_UART_STATUSES(X)                                              \
  X(Ok, ok, 0)                                                                \
  X(BadCrc, bad_crc, 1)               /* the request's CRC did not check */   \
  X(BadCommand, bad_command, 2)       /* unknown command */                   \
  X(BadLength, bad_length, 3)         /* zero words or more than kMaxWords */ \
  X(BadAddress, bad_address, 4)       /* unaligned, or beyond the memory */   \
  X(RegisterError, register_error, 5) /* the register port answered SLVERR */

enum class Status : uint8_t {
#define SYSTOLE_UART_STATUS_ENUM(Name, name, value) k##Name = value,
  SYSTOLE_UART_STATUSES(SYSTOLE_UART_STATUS_ENUM)
#undef SYSTOLE_UART_STATUS_ENUM
};

}  // namespace systole::spec::uart
