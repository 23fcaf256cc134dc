// SPDX-License-Identifier: Apache-2.0
#include "uart_backend.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <vector>

#include "../src/bank_allocator.h"
#include "../src/hex.h"
#include "uart_link.h"

namespace systole {
namespace uart {
namespace {

using spec::uart::Command;

const char* command_name(Command command) {
  switch (command) {
#define SYSTOLE_UART_COMMAND_WHAT(Name, value, what) \
  case Command::k##Name:                             \
    return what;
    SYSTOLE_UART_COMMANDS(SYSTOLE_UART_COMMAND_WHAT)
#undef SYSTOLE_UART_COMMAND_WHAT
  }
  return "a request";
}

class UartBackend : public detail::DeviceBackend {
 public:
  UartBackend(std::unique_ptr<SerialPort> port, const UartOptions& options)
      : port_(std::move(port)), options_(options), allocator_(1, options.memory_bytes) {}

  std::string name() const override { return "uart[" + port_->name() + "]"; }
  uint32_t compute_units() const override { return 1; }
  uint32_t hbm_banks() const override { return 1; }
  uint64_t bank_bytes() const override { return options_.memory_bytes; }

  Result<uint64_t> allocate(std::size_t bytes, uint32_t bank) override {
    return allocator_.allocate(bytes, bank);
  }
  void release(uint64_t address) override { allocator_.release(address); }

  Status write_memory(uint64_t address, const void* src, std::size_t bytes) override {
    const auto* in = static_cast<const uint8_t*>(src);
    std::lock_guard<std::mutex> lock(mutex_);
    // Whole words go as they are; a partial word at either end is read,
    // merged and written back.
    while (bytes > 0) {
      const uint64_t word_addr = address & ~uint64_t(3);
      const std::size_t skip = std::size_t(address - word_addr);
      if (skip != 0 || bytes < 4) {
        const std::size_t take = std::min<std::size_t>(4 - skip, bytes);
        Result<std::vector<uint32_t>> word = transact(Command::kReadMemory, word_addr, {}, 1);
        if (!word.ok()) return word.status();
        uint8_t merged[4];
        std::memcpy(merged, word->data(), 4);
        std::memcpy(merged + skip, in, take);
        std::vector<uint32_t> out(1);
        std::memcpy(out.data(), merged, 4);
        SYSTOLE_RETURN_IF_ERROR(transact(Command::kWriteMemory, word_addr, out, 0).status());
        address += take, in += take, bytes -= take;
        continue;
      }
      const std::size_t words = std::min<std::size_t>(bytes / 4, spec::uart::kMaxWords);
      std::vector<uint32_t> out(words);
      std::memcpy(out.data(), in, 4 * words);
      SYSTOLE_RETURN_IF_ERROR(transact(Command::kWriteMemory, address, out, 0).status());
      address += 4 * words, in += 4 * words, bytes -= 4 * words;
    }
    return ok_status();
  }

  Status read_memory(uint64_t address, void* dst, std::size_t bytes) override {
    auto* out = static_cast<uint8_t*>(dst);
    std::lock_guard<std::mutex> lock(mutex_);
    while (bytes > 0) {
      const uint64_t word_addr = address & ~uint64_t(3);
      const std::size_t skip = std::size_t(address - word_addr);
      const std::size_t words = std::min<std::size_t>((skip + bytes + 3) / 4, spec::uart::kMaxWords);
      Result<std::vector<uint32_t>> in = transact(Command::kReadMemory, word_addr, {}, uint32_t(words));
      if (!in.ok()) return in.status();
      const std::size_t take = std::min(bytes, 4 * words - skip);
      std::memcpy(out, reinterpret_cast<const uint8_t*>(in->data()) + skip, take);
      address += take, out += take, bytes -= take;
    }
    return ok_status();
  }

  uint32_t read_register(uint32_t, uint32_t offset) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!link_.ok()) return 0;
    Result<std::vector<uint32_t>> word = transact(Command::kReadRegisters, offset, {}, 1);
    if (!word.ok()) {
      link_ = word.status();
      return 0;
    }
    return word->front();
  }

  void write_register(uint32_t, uint32_t offset, uint32_t value) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!link_.ok()) return;
    const Status status = transact(Command::kWriteRegisters, offset, {value}, 0).status();
    if (!status.ok()) link_ = status;
  }

  // Polls CONTROL (each read takes a frame's time) until ap_done.
  bool wait_done(uint32_t unit, std::chrono::milliseconds timeout) override {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    do {
      const uint32_t control = read_register(unit, spec::reg::kControl);
      if (!link_status().ok()) return false;
      if (control & spec::ctrl::kApDone) return true;
    } while (std::chrono::steady_clock::now() < deadline);
    return false;
  }

  Status link_status() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return link_;
  }

 private:
  // One request and its response; a read's words, else none.
  Result<std::vector<uint32_t>> transact(Command command, uint64_t address, const std::vector<uint32_t>& data,
                                         uint32_t read_words) {
    const std::string what = name() + ": " + command_name(command) + " at " + detail::hex(address);
    if (address > UINT32_MAX)
      return Status(StatusCode::kInvalidArgument, what + ": the link carries 32-bit addresses");
    const uint32_t words = is_read(command) ? read_words : uint32_t(data.size());
    const std::vector<uint8_t> request = is_read(command)
                                             ? read_request(command, uint32_t(address), read_words)
                                             : write_request(command, uint32_t(address), data);
    // Both frames' time on the line, twice over, and a margin for the host.
    const std::size_t line_bytes = request.size() + response_bytes(0, command, words);
    const auto timeout = std::chrono::milliseconds(250 + 2 * 10'000 * line_bytes / options_.baud);
    SYSTOLE_RETURN_IF_ERROR(port_->write(request.data(), request.size()));
    std::vector<uint8_t> response(2);
    Status status = port_->read(response.data(), 2, timeout);
    if (status.ok()) {
      response.resize(response_bytes(response[1], command, words));
      status = port_->read(response.data() + 2, response.size() - 2, timeout);
    }
    if (!status.ok()) {
      port_->discard_input();
      return Status(status.code(), what + ": " + status.message());
    }
    Result<Response> decoded = decode_response(response, command, words);
    if (!decoded.ok()) {
      port_->discard_input();
      return Status(decoded.status().code(), what + ": " + decoded.status().message());
    }
    if (decoded->status != spec::uart::Status::kOk)
      return Status(StatusCode::kDeviceError, what + ": the board answered " + status_name(decoded->status) +
                                                  " (" + std::to_string(unsigned(decoded->status)) + ")");
    return std::move(decoded->words);
  }

  std::unique_ptr<SerialPort> port_;
  UartOptions options_;
  detail::BankAllocator allocator_;
  mutable std::mutex mutex_;  // one frame on the line at a time
  Status link_;
};

}  // namespace

std::shared_ptr<detail::DeviceBackend> make_uart_backend(std::unique_ptr<SerialPort> port,
                                                         const UartOptions& options) {
  return std::make_shared<UartBackend>(std::move(port), options);
}

}  // namespace uart

Result<std::shared_ptr<detail::DeviceBackend>> detail::open_uart(uint32_t index,
                                                                 const DeviceOptions& options) {
  if (index != 0)
    return Status(StatusCode::kNotFound, "uart: one board per serial port; device " + std::to_string(index) +
                                             " does not exist (name the port: --device /dev/ttyUSB1)");
  Result<std::unique_ptr<uart::SerialPort>> port =
      uart::open_serial_port(options.uart.port, options.uart.baud);
  if (!port.ok()) return port.status();
  return uart::make_uart_backend(std::move(port).value(), options.uart);
}

}  // namespace systole
