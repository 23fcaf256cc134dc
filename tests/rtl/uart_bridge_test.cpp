// SPDX-License-Identifier: Apache-2.0
// The UART host link (label rtl): the Verilated bridge (UART receiver and
// transmitter, framing, CRC-16) in front of the kernel's register file and
// a device memory, driven bit by bit on its line by a software UART with
// the host's codec (driver/uart). Register reads and writes reach the
// register map as the AXI4-Lite port does; memory words go in and come
// back; bad frames get their error and change nothing; a frame cut short
// is dropped, and the line resynchronises after each.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <vector>

#include "Vsystole_uart_top.h"
#include "soft_uart.h"
#include "systole/spec.h"

namespace systole {
namespace {

using spec::uart::Command;
using UartStatus = spec::uart::Status;

constexpr uint32_t kClksPerBit = 4;  // the top's parameter
constexpr uint32_t kMemWords = 1024;
constexpr uint64_t kIdleClks = spec::uart::kIdleBitTimes * kClksPerBit;

using UartLink = testing::SoftUart<Vsystole_uart_top, kClksPerBit>;

uart::Response ok(Result<uart::Response> response) {
  EXPECT_TRUE(response.ok()) << response.status().to_string();
  if (!response.ok()) return {};
  EXPECT_EQ(response->status, UartStatus::kOk) << uart::status_name(response->status);
  return *response;
}

std::vector<uint32_t> read_words(UartLink& link, Command command, uint32_t address, uint32_t words) {
  return ok(link.transact(uart::read_request(command, address, words), command, words)).words;
}

UartStatus status_of(UartLink& link, const std::vector<uint8_t>& request, Command command, uint32_t words) {
  Result<uart::Response> response = link.transact(request, command, words);
  EXPECT_TRUE(response.ok()) << response.status().to_string();
  return response.ok() ? response->status : UartStatus::kOk;
}

std::vector<uint32_t> random_words(std::mt19937& rng, std::size_t count) {
  std::vector<uint32_t> words(count);
  for (uint32_t& word : words) word = uint32_t(rng());
  return words;
}

TEST(UartBridge, RegistersAreTheKernelsRegisterMap) {
  UartLink link;
  namespace reg = spec::reg;
  // The identification block in one request, as the register map has it.
  const std::vector<uint32_t> id = read_words(link, Command::kReadRegisters, reg::kId, 4);
  EXPECT_EQ(id, (std::vector<uint32_t>{spec::kDeviceId, spec::kVersion, 2u, 1u}));
  // Arguments are read/write, results read-only.
  const std::vector<uint32_t> window{0x12345678u, 0x9u};
  ok(link.transact(uart::write_request(Command::kWriteRegisters, reg::kMemBytesLo, window),
                   Command::kWriteRegisters, 2));
  EXPECT_EQ(read_words(link, Command::kReadRegisters, reg::kMemBytesLo, 2), window);
  ok(link.transact(uart::write_request(Command::kWriteRegisters, reg::kStatus, {7u}),
                   Command::kWriteRegisters, 1));
  EXPECT_EQ(read_words(link, Command::kReadRegisters, reg::kStatus, 1), std::vector<uint32_t>{0u});
  EXPECT_FALSE(link.assertion_failed());
}

TEST(UartBridge, MemoryWordsGoInAndComeBack) {
  const uint32_t seed = 11;
  std::printf("seed %u\n", seed);
  std::mt19937 rng(seed);
  UartLink link;
  // Awkward sizes, the largest request, and the last words of the memory.
  const std::pair<uint32_t, uint32_t> blocks[] = {
      {0, 1}, {4 * 3, 37}, {4 * 100, spec::uart::kMaxWords}, {4 * (kMemWords - 5), 5}};
  std::vector<std::vector<uint32_t>> written;
  for (const auto& [address, count] : blocks) {
    written.push_back(random_words(rng, count));
    ok(link.transact(uart::write_request(Command::kWriteMemory, address, written.back()),
                     Command::kWriteMemory, count));
  }
  for (std::size_t i = 0; i < std::size(blocks); ++i)
    EXPECT_EQ(read_words(link, Command::kReadMemory, blocks[i].first, blocks[i].second), written[i])
        << "seed " << seed << ", block at " << blocks[i].first;
  EXPECT_FALSE(link.assertion_failed());
}

TEST(UartBridge, BadFramesGetTheirErrorAndChangeNothing) {
  UartLink link;
  const std::vector<uint32_t> before{1u, 2u, 3u};
  ok(link.transact(uart::write_request(Command::kWriteMemory, 64, before), Command::kWriteMemory, 3));

  // A bit flipped in the data: the CRC catches it, nothing is written.
  std::vector<uint8_t> corrupt = uart::write_request(Command::kWriteMemory, 64, {7u, 8u, 9u});
  corrupt[10] ^= 0x10;
  EXPECT_EQ(status_of(link, corrupt, Command::kWriteMemory, 3), UartStatus::kBadCrc);
  EXPECT_EQ(read_words(link, Command::kReadMemory, 64, 3), before);

  // Bad headers are answered at once; the rest of the frame is dropped
  // (its data holds sync bytes, which must not start a frame) and the
  // line is usable again after it has been idle.
  const std::vector<uint32_t> syncs(4, 0xA5A5A5A5u);
  struct Case {
    std::vector<uint8_t> request;
    UartStatus expected;
  };
  std::vector<uint8_t> unknown = uart::write_request(Command::kWriteMemory, 64, syncs);
  unknown[1] = 9;
  const Case cases[] = {
      {unknown, UartStatus::kBadCommand},
      {uart::read_request(Command::kReadMemory, 64, 0), UartStatus::kBadLength},
      {uart::read_request(Command::kReadMemory, 64, spec::uart::kMaxWords + 1), UartStatus::kBadLength},
      {uart::write_request(Command::kWriteMemory, 66, syncs), UartStatus::kBadAddress},
      {uart::write_request(Command::kWriteMemory, 4 * (kMemWords - 2), syncs), UartStatus::kBadAddress},
      {uart::read_request(Command::kReadRegisters, 4096 - 4, 2), UartStatus::kBadAddress},
  };
  for (const Case& c : cases) {
    // Headers are answered before their frame's end: the status names them.
    EXPECT_EQ(status_of(link, c.request, Command::kWriteMemory, 0), c.expected)
        << uart::status_name(c.expected) << " expected";
    link.idle(c.request.size() * 10 * kClksPerBit + kIdleClks + 10);
    EXPECT_EQ(link.pending_output(), 0u) << "one response per request";
    EXPECT_EQ(read_words(link, Command::kReadMemory, 64, 3), before)
        << "the line resynchronised, nothing changed";
  }
  EXPECT_FALSE(link.assertion_failed());
}

TEST(UartBridge, AFrameCutShortIsDroppedAfterTheIdleTime) {
  UartLink link;
  const std::vector<uint32_t> before{5u, 6u}, words{0xDEADBEEFu, 0x01020304u};
  ok(link.transact(uart::write_request(Command::kWriteMemory, 8, before), Command::kWriteMemory, 2));
  std::vector<uint8_t> request = uart::write_request(Command::kWriteMemory, 8, words);
  request.resize(request.size() - 3);  // the last data byte and the CRC never come
  link.send(request);
  EXPECT_TRUE(link.receive(1, request.size() * 10 * kClksPerBit + kIdleClks + 100).empty()) << "no answer";
  EXPECT_EQ(read_words(link, Command::kReadMemory, 8, 2), before);
  ok(link.transact(uart::write_request(Command::kWriteMemory, 8, words), Command::kWriteMemory, 2));
  EXPECT_EQ(read_words(link, Command::kReadMemory, 8, 2), words);
  EXPECT_FALSE(link.assertion_failed());
}

TEST(UartLinkCodec, CrcIsCcittFalse) {
  // The check value of CRC-16/CCITT-FALSE over "123456789".
  const uint8_t text[] = {'1', '2', '3', '4', '5', '6', '7', '8', '9'};
  EXPECT_EQ(uart::crc16(text, sizeof text), 0x29B1);
  std::vector<uint8_t> frame{spec::uart::kResponseSync, 0, 0, 0};
  const uint16_t crc = uart::crc16(frame.data() + 1, 1);
  frame[2] = uint8_t(crc);
  frame[3] = uint8_t(crc >> 8);
  EXPECT_TRUE(uart::decode_response(frame, Command::kWriteMemory, 1).ok());
  frame[3] ^= 1;
  const Status bad = uart::decode_response(frame, Command::kWriteMemory, 1).status();
  EXPECT_NE(bad.message().find("CRC at byte 2"), std::string::npos) << bad.to_string();
}

}  // namespace
}  // namespace systole
