// SPDX-License-Identifier: Apache-2.0
// An AXI4 write slave over a byte array, for Verilator harnesses: the HBM
// model of one write port. It takes W beats once their burst's address has
// arrived (a slave may wait for AW), applies WSTRB, answers each burst on B
// after a latency (SLVERR or DECERR, and no write, for injected address
// ranges; DECERR past the end of memory),
// applies random back-pressure, and records every protocol violation of the
// master: unstable AW, illegal bursts, WLAST off the burst's last beat.
// Same per-cycle protocol as AxiReadMemory: before_edge(), the rising edge,
// after_edge().
#pragma once

#include <cstdint>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include "axi_resp.h"

#include "axi_read_memory.h"

namespace systole::sim {

struct AxiWritePort {
  const uint8_t* awvalid;
  uint8_t* awready;
  const uint64_t* awaddr;
  const uint8_t* awlen;
  const uint8_t* awsize;
  const uint8_t* awburst;
  const uint8_t* wvalid;
  uint8_t* wready;
  const uint32_t* wdata;  // 16 words
  const uint64_t* wstrb;  // one bit per byte
  const uint8_t* wlast;
  uint8_t* bvalid;
  const uint8_t* bready;
  uint8_t* bresp;
};

// The write channels of the AXI4 master `prefix` of Verilated model `model`,
// by the names hw/rtl/systole_axi.svh gives them (<prefix>_AWVALID, ...).
#define SYSTOLE_AXI_WRITE_PORT(model, prefix)                                                                \
  ::systole::sim::AxiWritePort {                                                                             \
    &(model).prefix##_AWVALID, &(model).prefix##_AWREADY, &(model).prefix##_AWADDR, &(model).prefix##_AWLEN, \
        &(model).prefix##_AWSIZE, &(model).prefix##_AWBURST, &(model).prefix##_WVALID,                       \
        &(model).prefix##_WREADY, &(model).prefix##_WDATA[0], &(model).prefix##_WSTRB,                       \
        &(model).prefix##_WLAST, &(model).prefix##_BVALID, &(model).prefix##_BREADY, &(model).prefix##_BRESP \
  }

class AxiWriteMemory {
 public:
  static constexpr uint32_t kBeatBytes = 64;

  // `memory` is the device memory (`size` bytes); the model does not own it.
  AxiWriteMemory(const AxiWritePort& port, uint8_t* memory, uint64_t size, MemoryTiming timing);

  // Bursts that touch [begin, end) write nothing and answer `resp`.
  void inject_error(uint64_t begin, uint64_t end, AxiResp resp = AxiResp::kSlvErr);
  void before_edge();
  void after_edge();

  const std::vector<std::string>& violations() const { return violations_; }

 private:
  struct Burst {
    uint64_t address;
    uint32_t beats;
    uint32_t written = 0;
    AxiResp resp = AxiResp::kOkay;
  };
  struct Request {
    bool valid;
    uint64_t address;
    uint8_t len, size, burst;
  };

  void violation(const std::string& what);

  AxiWritePort port_;
  uint8_t* memory_;
  uint64_t size_;
  MemoryTiming timing_;
  std::mt19937 rng_;
  std::uniform_real_distribution<double> coin_{0.0, 1.0};
  struct ErrorRange {
    uint64_t begin, end;
    AxiResp resp;
  };
  std::vector<ErrorRange> errors_;
  std::deque<Burst> open_;                              // awaiting W beats
  std::deque<std::pair<uint64_t, AxiResp>> responses_;  // (due cycle, response)
  Request previous_{};
  bool previous_fired_ = false;
  bool aw_fire_ = false, w_fire_ = false, b_fire_ = false;
  uint32_t w_words_[16] = {};
  uint64_t w_strobes_ = 0;
  bool w_last_ = false;
  uint64_t cycle_ = 0;
  std::vector<std::string> violations_;
};

}  // namespace systole::sim
