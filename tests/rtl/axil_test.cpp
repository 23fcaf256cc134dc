// SPDX-License-Identifier: Apache-2.0
// The AXI4-Lite register slave under Verilator (label rtl): raw AXI-Lite
// transactions check ap_ctrl_hs (start taken once, done and ready clear on
// read, idle), byte strobes, read-only registers and interrupts; then the
// real driver runs random command lists through the RTL register map, with
// the HLS kernel standing in for the RTL kernel top (not written yet) behind
// start_o/done_i, and the memory is compared with the reference.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "../../driver/src/backend.h"
#include "../../driver/src/device_memory.h"
#include "Vsystole_axil_regs_top.h"
#include "common/engines.h"
#include "common/random_workload.h"
#include "coverage.h"
#include "systole/gemm_plan.h"
#include "systole_kernel.h"
#include "verilated.h"

namespace systole {
namespace {

namespace reg = spec::reg;
constexpr spec::ArrayShape kShape{8, 8};

// Clock, reset and an AXI4-Lite master on the Verilated slave, plus the
// kernel behind it: on start_o the HLS kernel runs the command list on
// `memory`, and done_i reports its results on the next cycle.
class AxilHarness {
 public:
  AxilHarness(uint8_t* memory, uint64_t size)
      : context_(std::make_unique<VerilatedContext>()),
        model_(std::make_unique<Vsystole_axil_regs_top>(context_.get())),
        memory_(memory),
        size_(size),
        onchip_(std::make_unique<hls_kernel::OnChip<8, 8>>()) {
    model_->rst_ni = 0;
    tick();
    tick();
    model_->rst_ni = 1;
  }

  Vsystole_axil_regs_top& model() { return *model_; }
  uint64_t launches() const { return launches_; }

  void tick() {
    model_->clk_i = 0;
    model_->eval();
    model_->clk_i = 1;
    model_->eval();
    model_->done_i = 0;
    if (model_->start_o) run_kernel();
  }

  // One write; false if the slave never answered.
  bool write(uint32_t address, uint32_t data, uint32_t strobes = 0xF, bool data_first = false) {
    auto& m = *model_;
    m.s_axi_AWADDR = address;
    m.s_axi_WDATA = data;
    m.s_axi_WSTRB = strobes;
    bool address_taken = false, data_taken = false;
    m.s_axi_WVALID = data_first;
    m.s_axi_AWVALID = !data_first;
    m.s_axi_BREADY = 0;
    for (int cycle = 0; cycle < 100; ++cycle) {
      m.eval();
      const bool aw = m.s_axi_AWVALID && m.s_axi_AWREADY, w = m.s_axi_WVALID && m.s_axi_WREADY;
      tick();
      if (aw) address_taken = true, m.s_axi_AWVALID = 0;
      if (w) data_taken = true, m.s_axi_WVALID = 0;
      if (address_taken && !data_taken) m.s_axi_WVALID = 1;
      if (data_taken && !address_taken) m.s_axi_AWVALID = 1;
      if (m.s_axi_BVALID) {
        EXPECT_EQ(m.s_axi_BRESP, 0u);
        m.s_axi_BREADY = 1;
        tick();
        m.s_axi_BREADY = 0;
        return address_taken && data_taken;
      }
    }
    return false;
  }

  uint32_t read(uint32_t address) {
    auto& m = *model_;
    m.s_axi_ARADDR = address;
    m.s_axi_ARVALID = 1;
    m.s_axi_RREADY = 0;
    for (int cycle = 0; cycle < 100; ++cycle) {
      m.eval();
      const bool taken = m.s_axi_ARREADY;
      tick();
      if (taken) m.s_axi_ARVALID = 0;
      if (m.s_axi_RVALID) {
        const uint32_t data = m.s_axi_RDATA;
        EXPECT_EQ(m.s_axi_RRESP, 0u);
        m.s_axi_RREADY = 1;
        tick();
        m.s_axi_RREADY = 0;
        return data;
      }
    }
    ADD_FAILURE() << "read of 0x" << std::hex << address << " never answered";
    return 0xDEADBEEF;
  }

 private:
  void run_kernel() {
    ++launches_;
    auto& m = *model_;
    // The bases, as Verilator packs a wide port: 32-bit words, low first.
    uint64_t bases[spec::kMemoryPorts];
    for (uint32_t p = 0; p < spec::kMemoryPorts; ++p)
      bases[p] = m.port_base_o[2 * p] | uint64_t(m.port_base_o[2 * p + 1]) << 32;
    const uint64_t cmd = bases[0], mem_bytes = m.mem_bytes_o;
    hls_kernel::LaunchResult result;
    if (cmd % 64 || !spec::in_range(cmd, 64, size_) || mem_bytes > size_) {
      result.status = spec::ErrorCode::kAddressOutOfRange;
      result.error_index = spec::kHeaderErrorIndex;
    } else {
      // With the vector engine, as the Features register says.
      result = hls_kernel::systole_kernel(hls_kernel::ports_at(memory_, bases), mem_bytes, *onchip_,
                                          spec::feature::kVectorEngine);
    }
    m.done_i = 1;
    m.status_i = uint32_t(result.status);
    m.error_index_i = result.error_index;
    m.descriptors_done_i = result.counters.descriptors_done;
    m.busy_cycles_i = result.counters.busy_cycles;
    m.macs_i = result.counters.macs;
    m.dma_read_bytes_i = result.counters.dma_read_bytes;
    m.dma_write_bytes_i = result.counters.dma_write_bytes;
    m.stall_cycles_i = result.counters.stall_cycles;
  }

  std::unique_ptr<VerilatedContext> context_;
  std::unique_ptr<Vsystole_axil_regs_top> model_;
  sim::CoverageWriter coverage_{context_.get()};  // after the model: ends first
  uint8_t* memory_;                               // the device memory, not owned
  uint64_t size_;
  std::unique_ptr<hls_kernel::OnChip<8, 8>> onchip_;
  uint64_t launches_ = 0;
};

TEST(RtlAxiLite, ApCtrlHsStrobesAndInterrupts) {
  std::vector<uint8_t> memory(1 << 16);
  AxilHarness h(memory.data(), memory.size());
  EXPECT_EQ(h.read(reg::kId), spec::kDeviceId);
  EXPECT_EQ(h.read(reg::kVersion), spec::kVersion);
  EXPECT_EQ(h.read(reg::kArrayRows), kShape.rows);
  EXPECT_EQ(h.read(reg::kMaxK), kShape.max_k());
  EXPECT_EQ(h.read(reg::kMaxM), kShape.max_m());
  EXPECT_EQ(h.read(reg::kMaxN), kShape.max_n());
  EXPECT_EQ(h.read(reg::kMaxDescriptors), kShape.max_descriptors());
  EXPECT_EQ(h.read(reg::kFeatures), spec::feature::kVectorEngine) << "the kernel's Features parameter";
  EXPECT_EQ(h.read(reg::kControl), spec::ctrl::kApIdle);
  EXPECT_EQ(h.read(0xFFC), 0u) << "unmapped reads as 0";

  // Arguments: full words, then byte strobes, both channel orders.
  ASSERT_TRUE(h.write(reg::kMemBytesLo, 0x11223344));
  ASSERT_TRUE(h.write(reg::kMemBytesLo, 0xAABBCCDD, 0b0101, /*data_first=*/true));
  EXPECT_EQ(h.read(reg::kMemBytesLo), 0x11BB33DDu);
  ASSERT_TRUE(h.write(reg::kId, 0));
  EXPECT_EQ(h.read(reg::kId), spec::kDeviceId) << "identification is read-only";

  // A launch that fails validation (the command list is all zeros).
  ASSERT_TRUE(h.write(reg::kCommandAddrLo, 0));
  ASSERT_TRUE(h.write(reg::kMemBytesLo, uint32_t(memory.size())));
  ASSERT_TRUE(h.write(reg::kGlobalIntEnable, 1));
  ASSERT_TRUE(h.write(reg::kIpIntEnable, 1));
  EXPECT_FALSE(h.model().interrupt_o);
  ASSERT_TRUE(h.write(reg::kControl, spec::ctrl::kApStart));
  for (int i = 0; i < 4; ++i) h.tick();
  EXPECT_EQ(h.launches(), 1u) << "ap_start starts exactly one launch";
  EXPECT_TRUE(h.model().interrupt_o);
  EXPECT_EQ(h.read(reg::kStatus), uint32_t(spec::ErrorCode::kBadMagic));
  EXPECT_EQ(h.read(reg::kErrorIndex), spec::kHeaderErrorIndex);
  const uint32_t control = h.read(reg::kControl);
  EXPECT_EQ(control, spec::ctrl::kApDone | spec::ctrl::kApIdle | spec::ctrl::kApReady);
  EXPECT_EQ(h.read(reg::kControl), spec::ctrl::kApIdle) << "ap_done and ap_ready clear on read";
  EXPECT_EQ(h.read(reg::kIpIntStatus), 1u);
  ASSERT_TRUE(h.write(reg::kIpIntStatus, 1));  // toggle on write
  EXPECT_EQ(h.read(reg::kIpIntStatus), 0u);
  EXPECT_FALSE(h.model().interrupt_o);
}

// The driver's view: a DeviceBackend whose registers are the RTL slave's.
// Memory comes from EmulatedBackend, as for sw_emu and hw_emu.
class RtlRegisterBackend final : public detail::EmulatedBackend {
 public:
  RtlRegisterBackend() : EmulatedBackend(2, 1 << 20), harness_(memory_.base(), memory_.bytes()) {}

  std::string name() const override { return "rtl-registers 8x8"; }
  uint32_t compute_units() const override { return 1; }
  uint32_t read_register(uint32_t, uint32_t offset) override { return harness_.read(offset); }
  void write_register(uint32_t, uint32_t offset, uint32_t value) override {
    EXPECT_TRUE(harness_.write(offset, value));
  }
  bool wait_done(uint32_t, std::chrono::milliseconds) override {
    // The stand-in kernel finishes within a few cycles of ap_start; the
    // interrupt line says when (reading CONTROL would clear ap_done).
    for (int cycle = 0; cycle < 1000; ++cycle) {
      if (harness_.model().interrupt_o) return true;
      harness_.tick();
    }
    return false;
  }

 private:
  AxilHarness harness_;
};

TEST(RtlAxiLite, TheDriverRunsCommandListsThroughTheRtlRegisters) {
  auto backend = std::make_shared<RtlRegisterBackend>();
  Result<Device> device = detail::attach_device(backend, "rtl", 0);
  ASSERT_TRUE(device.ok()) << device.status().to_string();
  EXPECT_EQ(device->info().shape.rows, 8u) << "the driver read the RTL's ID registers";
  // The driver does not enable interrupts; the test's wait does.
  backend->write_register(0, reg::kGlobalIntEnable, 1);
  backend->write_register(0, reg::kIpIntEnable, 1);
  for (uint32_t seed : {1u, 2u, 3u}) {
    testing::WorkloadOptions options;
    options.shape = kShape;
    const testing::Workload workload = testing::make_workload(seed, options);
    const auto list = encode_command_lists(workload.rebased(0), 100).at(0);
    const testing::Outcome outcome = testing::run_on_device(*device, workload.memory, list);
    ASSERT_TRUE(outcome.status.ok()) << "seed " << seed << ": " << outcome.status.to_string();
    EXPECT_EQ(testing::first_difference(testing::run_reference(workload, 8).memory, outcome.memory), "")
        << "seed " << seed;
    uint64_t macs = 0;
    for (const auto& d : workload.descriptors) macs += uint64_t(d.m) * d.n * d.k;
    EXPECT_EQ(outcome.counters.macs, macs) << "64-bit counters through two registers";
    backend->write_register(0, reg::kIpIntStatus, 1);  // acknowledge
  }
}

}  // namespace
}  // namespace systole
