// SPDX-License-Identifier: Apache-2.0
// AXI4 read slave model with protocol checks.
#include "axi_read_memory.h"

#include <algorithm>
#include <cstring>

namespace systole::sim {
namespace {

// Whether `address` lies in one of the [begin, end) ranges.
bool in_any(const std::vector<std::pair<uint64_t, uint64_t>>& ranges, uint64_t address) {
  return std::any_of(ranges.begin(), ranges.end(),
                     [&](const auto& range) { return address >= range.first && address < range.second; });
}

}  // namespace

AxiReadMemory::AxiReadMemory(const AxiReadPort& port, const uint8_t* memory, uint64_t size,
                             MemoryTiming timing)
    : port_(port), memory_(memory), size_(size), timing_(timing), rng_(timing.seed) {
  *port_.arready = 0;
  *port_.rvalid = 0;
  *port_.rlast = 0;
  *port_.rresp = 0;
}

void AxiReadMemory::inject_error(uint64_t begin, uint64_t end, AxiResp resp) {
  errors_.push_back({begin, end, resp});
}

void AxiReadMemory::check_request(const Request& r) {
  auto fail = [&](const std::string& what) {
    violations_.push_back("cycle " + std::to_string(cycle_) + ": " + what + " (araddr " +
                          std::to_string(r.address) + ", arlen " + std::to_string(r.len) + ")");
  };
  if (previous_.valid && !previous_fired_ &&
      (!r.valid || r.address != previous_.address || r.len != previous_.len || r.size != previous_.size ||
       r.burst != previous_.burst))
    fail("ARVALID dropped or its payload changed before ARREADY");
  if (!r.valid) return;
  if (r.burst != 1) fail("burst type is not INCR");
  if ((1u << r.size) != kBeatBytes) fail("beat size is not the data width");
  if (r.address % kBeatBytes != 0) fail("address not aligned to a beat");
  if (uint32_t(r.len) + 1 > 256) fail("longer than 256 beats");
  if (r.address % 4096 + (uint64_t(r.len) + 1) * kBeatBytes > 4096) fail("burst crosses a 4 KiB boundary");
}

void AxiReadMemory::before_edge() {
  const Request request{*port_.arvalid != 0, *port_.araddr, *port_.arlen, *port_.arsize, *port_.arburst};
  check_request(request);
  ar_fire_ = request.valid && *port_.arready;
  r_fire_ = *port_.rvalid && *port_.rready;
  previous_ = request;
  previous_fired_ = ar_fire_;
}

void AxiReadMemory::inject_stall(uint64_t begin, uint64_t end) { stalls_.emplace_back(begin, end); }

void AxiReadMemory::drive_beat() {
  const Burst& burst = bursts_queue_.front();
  const uint64_t address = burst.address + uint64_t(beat_in_burst_) * kBeatBytes;
  std::memset(port_.rdata, 0, kBeatBytes);
  if (address + kBeatBytes <= size_) std::memcpy(port_.rdata, memory_ + address, kBeatBytes);
  AxiResp resp = address + kBeatBytes > size_ ? AxiResp::kDecErr : AxiResp::kOkay;
  for (const ErrorRange& range : errors_)
    if (resp == AxiResp::kOkay && address >= range.begin && address < range.end) resp = range.resp;
  *port_.rresp = uint8_t(resp);
  *port_.rlast = beat_in_burst_ + 1 == burst.beats;
  *port_.rvalid = 1;
}

void AxiReadMemory::after_edge() {
  ++cycle_;
  if (ar_fire_) {
    bursts_queue_.push_back(
        {previous_.address, uint32_t(previous_.len) + 1, cycle_ + timing_.latency_cycles});
    max_outstanding_ = std::max<uint32_t>(max_outstanding_, uint32_t(bursts_queue_.size()));
  }
  if (r_fire_) {
    if (++beat_in_burst_ == bursts_queue_.front().beats) {
      bursts_queue_.pop_front();
      beat_in_burst_ = 0;
    }
    *port_.rvalid = 0;
  }
  // A beat on the bus stays until taken (RVALID may not drop).
  if (!*port_.rvalid && !bursts_queue_.empty() && bursts_queue_.front().ready_cycle <= cycle_ &&
      !in_any(stalls_, bursts_queue_.front().address) && coin_(rng_) < timing_.rvalid_probability)
    drive_beat();
  *port_.arready = coin_(rng_) < timing_.arready_probability;
}

}  // namespace systole::sim
