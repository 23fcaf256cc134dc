// SPDX-License-Identifier: Apache-2.0
// AXI4 write slave model with protocol checks.
#include "axi_write_memory.h"

#include <algorithm>
#include <cstring>

namespace systole::sim {

AxiWriteMemory::AxiWriteMemory(const AxiWritePort& port, uint8_t* memory, uint64_t size, MemoryTiming timing)
    : port_(port), memory_(memory), size_(size), timing_(timing), rng_(timing.seed) {
  *port_.awready = 0;
  *port_.wready = 0;
  *port_.bvalid = 0;
  *port_.bresp = 0;
}

void AxiWriteMemory::inject_error(uint64_t begin, uint64_t end, AxiResp resp) {
  errors_.push_back({begin, end, resp});
}

void AxiWriteMemory::violation(const std::string& what) {
  violations_.push_back("cycle " + std::to_string(cycle_) + ": " + what);
}

void AxiWriteMemory::before_edge() {
  const Request r{*port_.awvalid != 0, *port_.awaddr, *port_.awlen, *port_.awsize, *port_.awburst};
  if (previous_.valid && !previous_fired_ &&
      (!r.valid || r.address != previous_.address || r.len != previous_.len))
    violation("AWVALID dropped or its payload changed before AWREADY");
  if (r.valid) {
    if (r.burst != 1) violation("burst type is not INCR");
    if ((1u << r.size) != kBeatBytes) violation("beat size is not the data width");
    if (r.address % kBeatBytes != 0) violation("address not aligned to a beat");
    if (r.address % 4096 + (uint64_t(r.len) + 1) * kBeatBytes > 4096)
      violation("burst crosses a 4 KiB boundary at " + std::to_string(r.address));
  }
  aw_fire_ = r.valid && *port_.awready;
  previous_ = r;
  previous_fired_ = aw_fire_;
  w_fire_ = *port_.wvalid && *port_.wready;
  if (w_fire_) {
    std::memcpy(w_words_, port_.wdata, kBeatBytes);
    w_strobes_ = *port_.wstrb;
    w_last_ = *port_.wlast;
  }
  b_fire_ = *port_.bvalid && *port_.bready;
}

void AxiWriteMemory::after_edge() {
  ++cycle_;
  if (aw_fire_) {
    Burst burst{previous_.address, uint32_t(previous_.len) + 1};
    const uint64_t end = burst.address + uint64_t(burst.beats) * kBeatBytes;
    if (end > size_) burst.resp = AxiResp::kDecErr;
    for (const ErrorRange& range : errors_)
      if (burst.resp == AxiResp::kOkay && burst.address < range.end && end > range.begin)
        burst.resp = range.resp;
    open_.push_back(burst);
  }
  if (w_fire_) {
    if (open_.empty()) {
      violation("W beat without a burst");
    } else {
      Burst& burst = open_.front();
      const uint64_t address = burst.address + uint64_t(burst.written) * kBeatBytes;
      const bool last = burst.written + 1 == burst.beats;
      if (w_last_ != last)
        violation(std::string("WLAST ") + (w_last_ ? "early" : "missing") + " at " + std::to_string(address));
      if (burst.resp == AxiResp::kOkay) {
        const uint8_t* bytes = reinterpret_cast<const uint8_t*>(w_words_);
        for (uint32_t b = 0; b < kBeatBytes; ++b)
          if (w_strobes_ >> b & 1) memory_[address + b] = bytes[b];
      }
      if (++burst.written == burst.beats) {
        responses_.emplace_back(cycle_ + timing_.latency_cycles, burst.resp);
        open_.pop_front();
      }
    }
  }
  if (b_fire_) {
    *port_.bvalid = 0;
    responses_.pop_front();
  }
  if (!*port_.bvalid && !responses_.empty() && responses_.front().first <= cycle_) {
    *port_.bvalid = 1;
    *port_.bresp = uint8_t(responses_.front().second);
  }
  *port_.awready = coin_(rng_) < timing_.arready_probability;
  *port_.wready = !open_.empty() && coin_(rng_) < timing_.rvalid_probability;
}

}  // namespace systole::sim
