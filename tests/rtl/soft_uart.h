// SPDX-License-Identifier: Apache-2.0
// A Verilated top with a UART line (clk_i, rx_i, tx_o, and rst_ni unless
// the top resets itself) on a clock, and a software UART on that line:
// bytes queued for rx_i go out one bit per ClksPerBit cycles; bytes on tx_o
// are sampled in the middle of each bit. The uart tests drive the bridge
// and the small-board design with it.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "coverage.h"
#include "model_context.h"
#include "systole/status.h"
#include "uart_link.h"
#include "verilated.h"

namespace systole::testing {

// Whether a top has a reset input (a board's top makes its own).
template <class Model, class = void>
struct HasResetInput : std::false_type {};
template <class Model>
struct HasResetInput<Model, std::void_t<decltype(std::declval<Model&>().rst_ni)>> : std::true_type {};

template <class Model, uint32_t ClksPerBit>
class SoftUart {
 public:
  SoftUart() : model_(std::make_unique<Model>(context_.get())) {
    context_->fatalOnError(false);  // an assertion fails the test, not the process
    model_->rx_i = 1;
    if constexpr (HasResetInput<Model>::value) {
      model_->rst_ni = 0;
      tick();
      tick();
      model_->rst_ni = 1;
    }
  }
  ~SoftUart() { context_.make_current(); }

  void send(const uint8_t* bytes, std::size_t size) {
    for (std::size_t i = 0; i < size; ++i) {
      line_.push_back(0);
      for (int b = 0; b < 8; ++b) line_.push_back((bytes[i] >> b) & 1);
      line_.push_back(1);
    }
  }
  void send(const std::vector<uint8_t>& bytes) { send(bytes.data(), bytes.size()); }

  // Runs until `count` bytes have come back or `cycles` pass.
  std::vector<uint8_t> receive(std::size_t count, uint64_t cycles) {
    for (uint64_t c = 0; c < cycles && received_.size() < count; ++c) tick();
    std::vector<uint8_t> bytes(received_.begin(), received_.begin() + std::min(count, received_.size()));
    received_.erase(received_.begin(), received_.begin() + bytes.size());
    return bytes;
  }

  // Sends a request and reads its whole response.
  Result<uart::Response> transact(const std::vector<uint8_t>& request, spec::uart::Command command,
                                  uint32_t words) {
    send(request);
    const uint64_t budget = (request.size() + 8 + 4 * uint64_t(words)) * 10 * ClksPerBit + 20 * words + 1000;
    std::vector<uint8_t> frame = receive(2, budget);
    if (frame.size() < 2) return Status(StatusCode::kTimeout, "no response");
    const std::vector<uint8_t> rest = receive(uart::response_bytes(frame[1], command, words) - 2, budget);
    frame.insert(frame.end(), rest.begin(), rest.end());
    return uart::decode_response(frame, command, words);
  }

  // Lets the line idle for `cycles` (after a drop, the bridge needs its idle time).
  void idle(uint64_t cycles) {
    for (uint64_t c = 0; c < cycles; ++c) tick();
  }
  std::size_t pending_output() const { return received_.size(); }
  // Bits still to go out on rx_i, or a byte coming in on tx_o.
  bool line_busy() const { return !line_.empty() || in_byte_; }
  void discard_output() { received_.clear(); }
  // Called after every clock with the model: a test's view of the top's
  // other outputs.
  void watch(std::function<void(const Model&)> observer) { observer_ = std::move(observer); }
  bool assertion_failed() const { return context_->gotError(); }
  uint64_t cycles() const { return cycles_; }
  Model& model() { return *model_; }

 private:
  void tick() {
    // The line: one bit per ClksPerBit cycles.
    if (!line_.empty()) {
      model_->rx_i = line_.front();
      if (++bit_clock_ == ClksPerBit) {
        bit_clock_ = 0;
        line_.pop_front();
      }
    } else {
      model_->rx_i = 1;
    }
    model_->clk_i = 0;
    model_->eval();
    model_->clk_i = 1;
    model_->eval();
    ++cycles_;
    sample(model_->tx_o);
    if (observer_) observer_(*model_);
  }

  // A receiver on tx_o: a falling edge starts a byte, each bit is read
  // in its middle.
  void sample(bool tx) {
    if (!in_byte_) {
      if (!tx && last_tx_) {
        in_byte_ = true;
        clocks_ = 0;
        bits_ = 0;
        byte_ = 0;
      }
    } else if (++clocks_ == ClksPerBit / 2 + ClksPerBit * (bits_ + 1)) {
      if (bits_ < 8) {
        byte_ |= uint8_t(tx) << bits_;
        ++bits_;
      } else {
        EXPECT_TRUE(tx) << "stop bit";
        received_.push_back(byte_);
        in_byte_ = false;
      }
    }
    last_tx_ = tx;
  }

  sim::ModelContext context_;
  std::unique_ptr<Model> model_;
  sim::CoverageWriter coverage_{context_.get()};
  std::function<void(const Model&)> observer_;
  std::deque<uint8_t> line_;
  uint32_t bit_clock_ = 0;
  std::deque<uint8_t> received_;
  bool last_tx_ = true, in_byte_ = false;
  uint32_t clocks_ = 0, bits_ = 0;
  uint8_t byte_ = 0;
  uint64_t cycles_ = 0;
};

}  // namespace systole::testing
