// SPDX-License-Identifier: Apache-2.0
// The read DMA under Verilator against sim/'s AXI4 memory model (label rtl):
// random requests (crossing 4 KiB pages, single bytes, whole pages) under
// several latency and back-pressure profiles. Every beat must be the
// memory's, `last` only on a request's final beat, no protocol violation,
// bursts pipelined; an injected SLVERR sets the error without hanging.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "Vsystole_dma_read_top.h"
#include "axi_read_memory.h"
#include "coverage.h"
#include "verilated.h"

namespace systole {
namespace {

class DmaHarness {
 public:
  DmaHarness(const std::vector<uint8_t>& memory, sim::MemoryTiming timing)
      : context_(std::make_unique<VerilatedContext>()),
        dma_(std::make_unique<Vsystole_dma_read_top>(context_.get())),
        memory_(memory),
        axi_(SYSTOLE_AXI_READ_PORT(*dma_, m_axi), memory.data(), memory.size(), timing) {
    dma_->rst_ni = 0;
    cycle(false);
    cycle(false);
    dma_->rst_ni = 1;
  }

  Vsystole_dma_read_top& dma() { return *dma_; }
  sim::AxiReadMemory& axi() { return axi_; }

  uint64_t cycles() const { return cycles_; }
  const uint8_t* last_beat() const { return beat_; }  // the beat the last cycle took
  bool last_flag() const { return last_; }

  // One clock; returns whether a beat was taken (and checks it).
  bool cycle(bool ready) {
    ++cycles_;
    dma_->clk_i = 0;
    dma_->beat_ready_i = ready;
    dma_->eval();
    axi_.before_edge();
    const bool taken = dma_->beat_valid_o && ready;
    if (taken) {
      std::memcpy(beat_, &dma_->beat_o[0], 64);
      last_ = dma_->beat_last_o;
    }
    dma_->clk_i = 1;
    dma_->eval();
    axi_.after_edge();
    return taken;
  }

  // Runs one request to completion; returns the beats' addresses checked.
  void transfer(uint64_t address, uint32_t bytes, double ready_probability, std::mt19937& rng,
                const std::string& where) {
    auto& d = *dma_;
    d.req_valid_i = 1;
    d.req_addr_i = address;
    d.req_bytes_i = bytes;
    int guard = 0;
    while (true) {
      d.clk_i = 0;
      d.eval();
      const bool accepted = d.req_ready_o;
      cycle(false);
      if (accepted) break;
      ASSERT_LT(++guard, 10000) << where << ": request never accepted";
    }
    d.req_valid_i = 0;
    const uint64_t first = address / 64, last = (address + bytes - 1) / 64;
    uint64_t beat = first;
    std::uniform_real_distribution<double> coin(0.0, 1.0);
    for (guard = 0; beat <= last; ++guard) {
      ASSERT_LT(guard, 200000) << where << ": beats stopped";
      if (!cycle(coin(rng) < ready_probability)) continue;
      ASSERT_EQ(std::memcmp(beat_, memory_.data() + beat * 64, 64), 0) << where << ", beat " << beat;
      ASSERT_EQ(last_, beat == last) << where << ", beat " << beat;
      ++beat;
    }
  }

 private:
  std::unique_ptr<VerilatedContext> context_;
  std::unique_ptr<Vsystole_dma_read_top> dma_;
  sim::CoverageWriter coverage_{context_.get()};  // after the model: ends first
  const std::vector<uint8_t>& memory_;
  sim::AxiReadMemory axi_;
  uint8_t beat_[64] = {};
  bool last_ = false;
  uint64_t cycles_ = 0;
};

std::vector<uint8_t> random_memory(uint32_t seed) {
  std::vector<uint8_t> memory(1 << 18);
  std::mt19937 rng(seed);
  for (uint8_t& b : memory) b = uint8_t(rng());
  return memory;
}

struct Profile {
  const char* name;
  sim::MemoryTiming timing;
  double ready_probability;
};

class DmaRead : public ::testing::TestWithParam<Profile> {};

TEST_P(DmaRead, DeliversExactlyTheCoveringBeats) {
  const Profile& profile = GetParam();
  const uint32_t seed = 53;
  const std::vector<uint8_t> memory = random_memory(seed);
  DmaHarness h(memory, profile.timing);
  std::mt19937 rng(seed);
  for (int i = 0; i < 150; ++i) {
    uint64_t address;
    uint32_t bytes;
    switch (rng() % 5) {
      case 0:
        address = 4096 * (rng() % 60) + 4096 - rng() % 64;
        bytes = 1 + rng() % 200;
        break;  // across a page
      case 1:
        address = 64 * (rng() % 4000) + 63;
        bytes = 1;
        break;  // one byte
      case 2:
        address = 4096 * (rng() % 60);
        bytes = 4096 * (1 + rng() % 3);
        break;  // whole pages
      default:
        address = rng() % 240000;
        bytes = 1 + rng() % 9000;
        break;
    }
    h.transfer(address, bytes, profile.ready_probability, rng,
               std::string(profile.name) + ", seed " + std::to_string(seed) + ", request " +
                   std::to_string(i) + " [" + std::to_string(address) + ", +" + std::to_string(bytes) + ")");
    if (HasFatalFailure()) return;
  }
  EXPECT_TRUE(h.axi().violations().empty()) << h.axi().violations().front();
  EXPECT_FALSE(h.dma().error_o);
  EXPECT_GT(h.axi().max_outstanding(), 1u) << "bursts are pipelined";
  EXPECT_LE(h.axi().max_outstanding(), 8u);
}

INSTANTIATE_TEST_SUITE_P(Rtl, DmaRead,
                         ::testing::Values(Profile{"fast", {1, 1.0, 1.0, 1}, 1.0},
                                           Profile{"latency", {30, 1.0, 1.0, 2}, 1.0},
                                           Profile{"backpressure", {5, 0.4, 0.6, 3}, 0.7},
                                           Profile{"slow_consumer", {10, 0.8, 1.0, 4}, 0.3}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST_P(DmaRead, QueuedRequestsDeliverTheirBeatsInOrder) {
  // Requests offered back to back, as the kernel's row readers do: each is
  // taken while earlier ones still await beats, and the beats come out in
  // request order with `last` on each request's final beat.
  const Profile& profile = GetParam();
  const uint32_t seed = 67;
  const std::vector<uint8_t> memory = random_memory(seed);
  DmaHarness h(memory, profile.timing);
  std::mt19937 rng(seed);
  struct Request {
    uint64_t address;
    uint32_t bytes;
  };
  std::vector<Request> requests(300);
  for (Request& r : requests) {
    r.bytes = rng() % 4 ? 1 + rng() % 130 : 1 + rng() % 5000;  // mostly rows of a few beats
    r.address = rng() % (memory.size() - r.bytes);
  }
  std::vector<std::pair<uint64_t, bool>> expected;  // beat index, last
  for (const Request& r : requests)
    for (uint64_t beat = r.address / 64; beat <= (r.address + r.bytes - 1) / 64; ++beat)
      expected.emplace_back(beat, beat == (r.address + r.bytes - 1) / 64);

  auto& d = h.dma();
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  size_t offered = 0, delivered = 0, max_queued = 0;
  for (int guard = 0; delivered < expected.size(); ++guard) {
    ASSERT_LT(guard, 2000000) << profile.name << ", seed " << seed << ": beats stopped";
    d.req_valid_i = offered < requests.size();
    if (d.req_valid_i) {
      d.req_addr_i = requests[offered].address;
      d.req_bytes_i = requests[offered].bytes;
    }
    d.clk_i = 0;
    d.eval();
    const bool accepted = d.req_valid_i && d.req_ready_o;
    if (accepted) {
      ++offered;
      // Requests taken but not yet fully delivered, counting this one.
      size_t queued = 0, beats = 0;
      for (size_t i = 0; i < offered; ++i) {
        beats += (requests[i].address + requests[i].bytes - 1) / 64 - requests[i].address / 64 + 1;
        if (beats > delivered) ++queued;
      }
      max_queued = std::max(max_queued, queued);
    }
    if (!h.cycle(coin(rng) < profile.ready_probability)) continue;
    const auto [beat, last] = expected[delivered];
    ASSERT_EQ(std::memcmp(h.last_beat(), memory.data() + beat * 64, 64), 0)
        << profile.name << ", seed " << seed << ": beat " << delivered << " (memory beat " << beat << ")";
    ASSERT_EQ(h.last_flag(), last) << profile.name << ", seed " << seed << ": beat " << delivered;
    ++delivered;
  }
  d.req_valid_i = 0;
  EXPECT_EQ(offered, requests.size());
  EXPECT_GT(max_queued, 1u) << "a request was taken while an earlier one still awaited beats";
  EXPECT_LE(max_queued, 8u);
  EXPECT_TRUE(h.axi().violations().empty()) << h.axi().violations().front();
}

TEST(DmaRead, LongTransfersRunNearThePortPeak) {
  // One 240 KiB request from an HBM-like memory (24 cycles to the first
  // beat, no back-pressure): the port peak is one 64-byte beat per cycle.
  // Cycle counts are deterministic, so this is a property of the RTL, not
  // a timing of the machine.
  const std::vector<uint8_t> memory = random_memory(61);
  DmaHarness h(memory, {24, 1.0, 1.0, 6});
  std::mt19937 rng(61);
  const uint32_t bytes = 240 * 1024;
  const uint64_t start = h.cycles();
  h.transfer(0, bytes, 1.0, rng, "long transfer");
  const double efficiency = double(bytes / 64) / double(h.cycles() - start);
  std::printf("FIGURE dma_read_efficiency %.3f of the port peak (240 KiB, latency 24)\n", efficiency);
  EXPECT_GE(efficiency, 0.90) << "the DMA's target: 90 % of the port peak";
  EXPECT_TRUE(h.axi().violations().empty());
}

TEST(DmaRead, AnErrorResponseIsReportedAndTheRequestCompletes) {
  const std::vector<uint8_t> memory = random_memory(59);
  DmaHarness h(memory, {8, 0.7, 0.8, 5});
  h.axi().inject_error(8192, 8192 + 64);
  std::mt19937 rng(59);
  h.transfer(0, 8192, 1.0, rng, "clean request (below the failing beat)");
  EXPECT_FALSE(h.dma().error_o);
  h.transfer(7000, 3000, 0.8, rng, "request over the failing beat");
  EXPECT_TRUE(h.dma().error_o) << "SLVERR must set error_o";
  h.dma().clear_error_i = 1;
  h.cycle(false);
  h.dma().clear_error_i = 0;
  EXPECT_FALSE(h.dma().error_o);
  h.transfer(100, 100, 1.0, rng, "request after the error");
  EXPECT_FALSE(h.dma().error_o);
  EXPECT_TRUE(h.axi().violations().empty());
}

}  // namespace
}  // namespace systole
