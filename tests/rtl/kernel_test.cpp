// The whole RTL kernel under Verilator (label rtl): AXI4-Lite control, four
// AXI4 masters on sim/'s memory models (latency, back-pressure, protocol
// checks), random command lists compared byte for byte with the reference;
// malformed descriptors and SLVERR responses end the launch with their code.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "Vsystole_kernel.h"
#include "axi_read_memory.h"
#include "axi_write_memory.h"
#include "common/engines.h"
#include "common/random_workload.h"
#include "systole/gemm_plan.h"
#include "verilated.h"

namespace systole {
namespace {

namespace reg = spec::reg;
constexpr spec::ArrayShape kShape{4, 4};

class KernelSim {
 public:
  KernelSim(std::vector<uint8_t>& memory, sim::MemoryTiming timing)
      : context_(std::make_unique<VerilatedContext>()), k_(std::make_unique<Vsystole_kernel>(context_.get())) {
    auto read_port = [&](auto& arvalid, auto& arready, auto& araddr, auto& arlen, auto& arsize,
                         auto& arburst, auto& rvalid, auto& rready, auto& rdata, auto& rresp, auto& rlast) {
      return sim::AxiReadPort{&arvalid, &arready, &araddr, &arlen, &arsize, &arburst,
                              &rvalid, &rready, &rdata[0], &rresp, &rlast};
    };
    Vsystole_kernel& k = *k_;
    uint32_t seed = timing.seed;
    for (auto port : {read_port(k.m_cmd_arvalid, k.m_cmd_arready, k.m_cmd_araddr, k.m_cmd_arlen, k.m_cmd_arsize,
                                k.m_cmd_arburst, k.m_cmd_rvalid, k.m_cmd_rready, k.m_cmd_rdata, k.m_cmd_rresp,
                                k.m_cmd_rlast),
                      read_port(k.m_a_arvalid, k.m_a_arready, k.m_a_araddr, k.m_a_arlen, k.m_a_arsize,
                                k.m_a_arburst, k.m_a_rvalid, k.m_a_rready, k.m_a_rdata, k.m_a_rresp, k.m_a_rlast),
                      read_port(k.m_b_arvalid, k.m_b_arready, k.m_b_araddr, k.m_b_arlen, k.m_b_arsize,
                                k.m_b_arburst, k.m_b_rvalid, k.m_b_rready, k.m_b_rdata, k.m_b_rresp, k.m_b_rlast),
                      read_port(k.m_c_arvalid, k.m_c_arready, k.m_c_araddr, k.m_c_arlen, k.m_c_arsize,
                                k.m_c_arburst, k.m_c_rvalid, k.m_c_rready, k.m_c_rdata, k.m_c_rresp, k.m_c_rlast)}) {
      timing.seed = ++seed;
      reads_.push_back(std::make_unique<sim::AxiReadMemory>(port, memory, timing));
    }
    timing.seed = ++seed;
    write_ = std::make_unique<sim::AxiWriteMemory>(
        sim::AxiWritePort{&k.m_c_awvalid, &k.m_c_awready, &k.m_c_awaddr, &k.m_c_awlen, &k.m_c_awsize,
                          &k.m_c_awburst, &k.m_c_wvalid, &k.m_c_wready, &k.m_c_wdata[0], &k.m_c_wstrb,
                          &k.m_c_wlast, &k.m_c_bvalid, &k.m_c_bready, &k.m_c_bresp},
        memory, timing);
    k.rst_ni = 0;
    tick();
    tick();
    k.rst_ni = 1;
  }

  Vsystole_kernel& kernel() { return *k_; }
  sim::AxiReadMemory& read_port(int index) { return *reads_[index]; }
  sim::AxiWriteMemory& write_port() { return *write_; }
  uint64_t cycles() const { return cycles_; }

  void tick() {
    k_->clk_i = 0;
    k_->eval();
    for (auto& port : reads_) port->before_edge();
    write_->before_edge();
    k_->clk_i = 1;
    k_->eval();
    for (auto& port : reads_) port->after_edge();
    write_->after_edge();
    ++cycles_;
  }

  void write(uint32_t address, uint32_t data) {
    auto& k = *k_;
    k.s_awaddr = address;
    k.s_wdata = data;
    k.s_wstrb = 0xF;
    k.s_awvalid = k.s_wvalid = 1;
    k.s_bready = 1;
    for (int cycle = 0; cycle < 100 && (k.s_awvalid || k.s_wvalid || !k.s_bvalid); ++cycle) {
      k.clk_i = 0;
      k.eval();
      const bool aw = k.s_awready, w = k.s_wready;
      tick();
      if (aw) k.s_awvalid = 0;
      if (w) k.s_wvalid = 0;
    }
    tick();
    k.s_bready = 0;
  }

  uint32_t read(uint32_t address) {
    auto& k = *k_;
    k.s_araddr = address;
    k.s_arvalid = 1;
    k.s_rready = 0;
    for (int cycle = 0; cycle < 100; ++cycle) {
      k.clk_i = 0;
      k.eval();
      const bool taken = k.s_arready;
      tick();
      if (taken) k.s_arvalid = 0;
      if (k.s_rvalid) {
        const uint32_t data = k.s_rdata;
        k.s_rready = 1;
        tick();
        k.s_rready = 0;
        return data;
      }
    }
    return 0xDEADBEEF;
  }

  // Starts the list at `list` and waits for the interrupt; false on timeout.
  bool launch(uint64_t list, uint64_t mem_bytes, uint64_t max_cycles) {
    write(reg::kCommandAddrLo, uint32_t(list));
    write(reg::kCommandAddrHi, uint32_t(list >> 32));
    for (uint32_t base : {reg::kABaseLo, reg::kABaseHi, reg::kBBaseLo, reg::kBBaseHi, reg::kCBaseLo, reg::kCBaseHi})
      write(base, 0);
    write(reg::kMemBytesLo, uint32_t(mem_bytes));
    write(reg::kMemBytesHi, uint32_t(mem_bytes >> 32));
    write(reg::kGlobalIntEnable, 1);
    write(reg::kIpIntEnable, 1);
    write(reg::kControl, spec::ctrl::kApStart);
    for (uint64_t cycle = 0; cycle < max_cycles; ++cycle) {
      if (k_->interrupt_o) {
        write(reg::kIpIntStatus, 1);
        return true;
      }
      tick();
    }
    return false;
  }

 private:
  std::unique_ptr<VerilatedContext> context_;
  std::unique_ptr<Vsystole_kernel> k_;
  std::vector<std::unique_ptr<sim::AxiReadMemory>> reads_;
  std::unique_ptr<sim::AxiWriteMemory> write_;
  uint64_t cycles_ = 0;
};

// The workload's image at address 0, its command list after it.
struct Placed {
  std::vector<uint8_t> memory;
  uint64_t list = 0;
};

Placed place(const testing::Workload& workload, const std::vector<spec::GemmDescriptor>& descriptors) {
  Placed placed;
  placed.memory = workload.memory;
  placed.list = (placed.memory.size() + 4095) / 4096 * 4096;
  const auto list = encode_command_lists(descriptors, 1000).at(0);
  placed.memory.resize(placed.list + list.size() + 4096);
  std::memcpy(placed.memory.data() + placed.list, list.data(), list.size());
  return placed;
}

void expect_no_violations(KernelSim& sim) {
  for (int p = 0; p < 4; ++p)
    EXPECT_TRUE(sim.read_port(p).violations().empty()) << "port " << p << ": " << sim.read_port(p).violations().front();
  EXPECT_TRUE(sim.write_port().violations().empty()) << sim.write_port().violations().front();
}

TEST(RtlKernel, RandomCommandListsMatchTheReference) {
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    testing::WorkloadOptions options;
    options.shape = kShape;
    options.descriptors = 4;
    options.max_m = 12;
    const testing::Workload workload = testing::make_workload(seed, options);
    Placed placed = place(workload, workload.rebased(0));
    KernelSim sim(placed.memory, {uint32_t(1 + seed % 7), 0.8, 0.8, seed});
    ASSERT_TRUE(sim.launch(placed.list, placed.memory.size(), 5'000'000)) << "seed " << seed << ": no interrupt";
    EXPECT_EQ(sim.read(reg::kStatus), 0u) << "seed " << seed;
    EXPECT_EQ(sim.read(reg::kDescriptorsDone), workload.descriptors.size());
    const std::vector<uint8_t> expected = testing::run_reference(workload, kShape.rows).memory;
    const std::vector<uint8_t> got(placed.memory.begin(), placed.memory.begin() + expected.size());
    EXPECT_EQ(testing::first_difference(expected, got), "") << "seed " << seed << "\n" << workload.description;
    uint64_t macs = 0;
    for (const auto& d : workload.descriptors) macs += uint64_t(d.m) * d.n * d.k;
    EXPECT_EQ(sim.read(reg::kMacsLo), uint32_t(macs));
    EXPECT_GT(sim.read(reg::kBusyCyclesLo), 0u);
    expect_no_violations(sim);
  }
}

// With 1-cycle memory and no back-pressure the DMA hides no latency, so
// the controller's own timing (draining the array before reading the
// accumulators, reusing a weight bank) decides the result.
TEST(RtlKernel, FastMemoryExposesTheControllersTiming) {
  for (uint32_t seed = 11; seed <= 30; ++seed) {
    testing::WorkloadOptions options;
    options.shape = kShape;
    options.descriptors = 3;
    options.max_m = 2;
    const testing::Workload workload = testing::make_workload(seed, options);
    Placed placed = place(workload, workload.rebased(0));
    KernelSim sim(placed.memory, {1, 1.0, 1.0, seed});
    ASSERT_TRUE(sim.launch(placed.list, placed.memory.size(), 5'000'000)) << "seed " << seed;
    EXPECT_EQ(sim.read(reg::kStatus), 0u) << "seed " << seed;
    const std::vector<uint8_t> expected = testing::run_reference(workload, kShape.rows).memory;
    const std::vector<uint8_t> got(placed.memory.begin(), placed.memory.begin() + expected.size());
    ASSERT_EQ(testing::first_difference(expected, got), "") << "seed " << seed << "\n" << workload.description;
  }
}

TEST(RtlKernel, AMalformedDescriptorEndsTheLaunchAndWritesNothing) {
  testing::WorkloadOptions options;
  options.shape = kShape;
  options.descriptors = 3;
  options.max_m = 8;
  const testing::Workload workload = testing::make_workload(7, options);
  std::vector<spec::GemmDescriptor> descriptors = workload.rebased(0);
  descriptors[2].lda = descriptors[2].k - 1;
  Placed placed = place(workload, descriptors);
  const std::vector<uint8_t> before = placed.memory;
  KernelSim sim(placed.memory, {3, 1.0, 1.0, 7});
  ASSERT_TRUE(sim.launch(placed.list, placed.memory.size(), 1'000'000));
  EXPECT_EQ(sim.read(reg::kStatus), uint32_t(spec::ErrorCode::kBadLeadingDim));
  EXPECT_EQ(sim.read(reg::kErrorIndex), 2u);
  EXPECT_EQ(testing::first_difference(before, placed.memory), "");
  // A bad header too.
  placed.memory[placed.list] ^= 1;
  ASSERT_TRUE(sim.launch(placed.list, placed.memory.size(), 1'000'000));
  EXPECT_EQ(sim.read(reg::kStatus), uint32_t(spec::ErrorCode::kBadMagic));
  EXPECT_EQ(sim.read(reg::kErrorIndex), spec::kHeaderErrorIndex);
  expect_no_violations(sim);
}

TEST(RtlKernel, AnAxiErrorEndsTheLaunchWithItsCode) {
  testing::WorkloadOptions options;
  options.shape = kShape;
  options.descriptors = 2;
  options.max_m = 8;
  const testing::Workload workload = testing::make_workload(8, options);
  Placed placed = place(workload, workload.rebased(0));
  KernelSim sim(placed.memory, {2, 1.0, 1.0, 8});
  sim.read_port(2).inject_error(0, placed.list);  // every B read fails
  ASSERT_TRUE(sim.launch(placed.list, placed.memory.size(), 1'000'000)) << "the kernel hung";
  EXPECT_EQ(sim.read(reg::kStatus), uint32_t(spec::ErrorCode::kAxiError));
  EXPECT_EQ(sim.read(reg::kErrorIndex), 0u);
  EXPECT_EQ(sim.read(reg::kControl) & spec::ctrl::kApIdle, spec::ctrl::kApIdle) << "back to idle";
  expect_no_violations(sim);
}

}  // namespace
}  // namespace systole
