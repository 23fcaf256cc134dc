// SPDX-License-Identifier: Apache-2.0
// An AXI4 read slave over a byte array, for Verilator harnesses: the HBM
// model of one port. It answers bursts after a latency, applies random
// back-pressure (ARREADY low, RVALID gaps), answers SLVERR or DECERR for
// injected address ranges and DECERR past the end of memory, and records
// every protocol violation of the master.
//
// It talks to a Verilated model through pointers to its port fields, so it
// depends on no particular model. Per clock cycle, with the clock low and
// the model evaluated: before_edge(); then the rising edge; then
// after_edge(), which drives the slave's outputs for the next cycle.
#pragma once

#include <cstdint>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include "axi_resp.h"

namespace systole::sim {

// The master's read ports, as fields of a Verilated model.
struct AxiReadPort {
  const uint8_t* arvalid;
  uint8_t* arready;
  const uint64_t* araddr;
  const uint8_t* arlen;
  const uint8_t* arsize;
  const uint8_t* arburst;
  uint8_t* rvalid;
  const uint8_t* rready;
  uint32_t* rdata;  // 16 words: a 512-bit beat, word 0 = bytes 0..3
  uint8_t* rresp;
  uint8_t* rlast;
};

// The read channels of the AXI4 master `prefix` of Verilated model `model`,
// by the names hw/rtl/systole_axi.svh gives them (<prefix>_ARVALID, ...).
#define SYSTOLE_AXI_READ_PORT(model, prefix)                                                                 \
  ::systole::sim::AxiReadPort {                                                                              \
    &(model).prefix##_ARVALID, &(model).prefix##_ARREADY, &(model).prefix##_ARADDR, &(model).prefix##_ARLEN, \
        &(model).prefix##_ARSIZE, &(model).prefix##_ARBURST, &(model).prefix##_RVALID,                       \
        &(model).prefix##_RREADY, &(model).prefix##_RDATA[0], &(model).prefix##_RRESP,                       \
        &(model).prefix##_RLAST                                                                              \
  }

struct MemoryTiming {
  uint32_t latency_cycles = 20;  // from AR handshake to the first R beat
  double arready_probability = 1.0;
  double rvalid_probability = 1.0;  // < 1: gaps between beats
  uint32_t seed = 1;
};

class AxiReadMemory {
 public:
  static constexpr uint32_t kBeatBytes = 64;

  // `memory` is the device memory (`size` bytes); the model does not own it.
  AxiReadMemory(const AxiReadPort& port, const uint8_t* memory, uint64_t size, MemoryTiming timing);

  // Beats whose address lies in [begin, end) answer `resp`.
  void inject_error(uint64_t begin, uint64_t end, AxiResp resp = AxiResp::kSlvErr);
  // Bursts that start in [begin, end) never return data: a hung memory, for
  // the driver's timeout.
  void inject_stall(uint64_t begin, uint64_t end);

  void before_edge();
  void after_edge();

  const std::vector<std::string>& violations() const { return violations_; }
  uint32_t max_outstanding() const { return max_outstanding_; }

 private:
  struct Burst {
    uint64_t address;
    uint32_t beats;
    uint64_t ready_cycle;  // first beat not before this cycle
  };
  struct Request {
    bool valid;
    uint64_t address;
    uint8_t len, size, burst;
  };

  void check_request(const Request& request);
  void drive_beat();

  AxiReadPort port_;
  const uint8_t* memory_;
  uint64_t size_;
  MemoryTiming timing_;
  std::mt19937 rng_;
  std::uniform_real_distribution<double> coin_{0.0, 1.0};
  struct ErrorRange {
    uint64_t begin, end;
    AxiResp resp;
  };
  std::vector<ErrorRange> errors_;
  std::vector<std::pair<uint64_t, uint64_t>> stalls_;
  std::deque<Burst> bursts_queue_;
  uint32_t beat_in_burst_ = 0;
  Request previous_{};
  bool ar_fire_ = false, r_fire_ = false;
  bool previous_fired_ = false;  // the AR handshake of the cycle before
  uint64_t cycle_ = 0;
  uint32_t max_outstanding_ = 0;
  std::vector<std::string> violations_;
};

}  // namespace systole::sim
