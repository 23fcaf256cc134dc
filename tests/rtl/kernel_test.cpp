// SPDX-License-Identifier: Apache-2.0
// The whole RTL kernel under Verilator (label rtl): AXI4-Lite control, four
// AXI4 masters on sim/'s memory models (latency, back-pressure, protocol
// checks), random command lists compared byte for byte with the reference;
// malformed descriptors and SLVERR responses end the launch with their code.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "Vsystole_kernel.h"
#include "common/engines.h"
#include "common/random_workload.h"
#include "kernel_harness.h"
#include "systole/gemm_plan.h"
#include "verilated.h"

namespace systole {
namespace {

namespace reg = spec::reg;
constexpr spec::ArrayShape kShape{4, 4};

using Harness = sim::KernelHarness<Vsystole_kernel>;

// Starts the list at `list` (ports at base 0) and waits for the interrupt.
bool launch(Harness& h, uint64_t list, uint64_t mem_bytes, uint64_t max_cycles) {
  bool ok = true;
  for (uint32_t port = 1; port < spec::kMemoryPorts; ++port)
    ok = h.write(reg::port_base(port), 0) && h.write(reg::port_base(port) + 4, 0) && ok;
  for (auto [offset, value] : {std::pair<uint32_t, uint32_t>{reg::kCommandAddrLo, uint32_t(list)},
                               {reg::kCommandAddrHi, uint32_t(list >> 32)},
                               {reg::kMemBytesLo, uint32_t(mem_bytes)},
                               {reg::kMemBytesHi, uint32_t(mem_bytes >> 32)},
                               {reg::kGlobalIntEnable, 1},
                               {reg::kIpIntEnable, 1},
                               {reg::kControl, spec::ctrl::kApStart}})
    ok = h.write(offset, value) && ok;
  return ok && h.run_until_interrupt(max_cycles);
}

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

// Neither the memory models' protocol checks nor the RTL's assertions
// (the harness reports those instead of aborting) saw anything wrong.
void expect_no_violations(const Harness& sim) {
  const std::vector<std::string> violations = sim.violations();
  EXPECT_TRUE(violations.empty()) << violations.front();
  EXPECT_FALSE(sim.assertion_failed()) << "an RTL assertion failed: its %Error line names it";
}

// Runs `workload` on a fresh kernel with `timing` and checks the status, the
// memory against the reference and the protocol; returns the harness for
// further checks.
std::unique_ptr<Harness> run_and_compare(const testing::Workload& workload, sim::MemoryTiming timing,
                                         std::vector<uint8_t>& memory) {
  Placed placed = place(workload, workload.rebased(0));
  memory = std::move(placed.memory);
  auto sim = std::make_unique<Harness>(memory.data(), memory.size(), timing);
  const std::string where = "seed " + std::to_string(timing.seed) + "\n" + workload.description;
  EXPECT_TRUE(launch(*sim, placed.list, memory.size(), 5'000'000)) << where << ": no interrupt";
  EXPECT_EQ(sim->read(reg::kStatus), 0u) << where;
  const std::vector<uint8_t> expected = testing::run_reference(workload, kShape.rows).memory;
  const std::vector<uint8_t> got(memory.begin(), memory.begin() + expected.size());
  EXPECT_EQ(testing::first_difference(expected, got), "") << where;
  expect_no_violations(*sim);
  return sim;
}

TEST(RtlKernel, RandomCommandListsMatchTheReference) {
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    testing::WorkloadOptions options;
    options.shape = kShape;
    options.descriptors = 4;
    options.max_m = 12;
    const testing::Workload workload = testing::make_workload(seed, options);
    std::vector<uint8_t> memory;
    const auto sim = run_and_compare(workload, {uint32_t(1 + seed % 7), 0.8, 0.8, seed}, memory);
    EXPECT_EQ(sim->read(reg::kDescriptorsDone), workload.descriptors.size());
    uint64_t macs = 0;
    for (const auto& d : workload.descriptors) macs += uint64_t(d.m) * d.n * d.k;
    EXPECT_EQ(sim->read(reg::kMacsLo), uint32_t(macs));
    EXPECT_GT(sim->read(reg::kBusyCyclesLo), 0u);
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
    std::vector<uint8_t> memory;
    run_and_compare(testing::make_workload(seed, options), {1, 1.0, 1.0, seed}, memory);
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
  Harness sim(placed.memory.data(), placed.memory.size(), {3, 1.0, 1.0, 7});
  ASSERT_TRUE(launch(sim, placed.list, placed.memory.size(), 1'000'000));
  EXPECT_EQ(sim.read(reg::kStatus), uint32_t(spec::ErrorCode::kBadLeadingDim));
  EXPECT_EQ(sim.read(reg::kErrorIndex), 2u);
  EXPECT_EQ(testing::first_difference(before, placed.memory), "");
  // A bad header too.
  placed.memory[placed.list] ^= 1;
  ASSERT_TRUE(launch(sim, placed.list, placed.memory.size(), 1'000'000));
  EXPECT_EQ(sim.read(reg::kStatus), uint32_t(spec::ErrorCode::kBadMagic));
  EXPECT_EQ(sim.read(reg::kErrorIndex), spec::kHeaderErrorIndex);
  expect_no_violations(sim);
}

// The fault matrix's AXI rows: SLVERR and DECERR, on the reads of each
// operand and on the writes of C, each on one port of its group, end the
// launch with kAxiError at the descriptor that met it, back to idle,
// within the cycle limit.
struct AxiFault {
  const char* name;
  uint32_t port;  // in spec::kPortNames
  bool write;     // its write channels (a c port), else its reads
  sim::AxiResp resp;
  friend void PrintTo(const AxiFault& fault, std::ostream* os) { *os << fault.name; }
};

class RtlAxiFaults : public ::testing::TestWithParam<AxiFault> {};

// The descriptor whose transfers first reach `fault`'s port: request i of
// a group's stream (counted over the whole list) goes to port i % count.
uint32_t first_descriptor_on(const AxiFault& fault, const std::vector<spec::GemmDescriptor>& list) {
  auto ceil_div = [](uint32_t a, uint32_t b) { return (a + b - 1) / b; };
  uint32_t first = 0, count = 0;
  if (fault.port >= spec::kFirstCPort) {
    first = spec::kFirstCPort;
    count = spec::kCPorts;
  } else if (fault.port >= spec::kFirstBPort) {
    first = spec::kFirstBPort;
    count = spec::kBPorts;
  } else {
    first = spec::kFirstAPort;
    count = spec::kAPorts;
  }
  uint64_t requests = 0;  // before the descriptor
  for (uint32_t i = 0; i < list.size(); ++i) {
    const spec::GemmDescriptor& d = list[i];
    const uint64_t n_tiles = ceil_div(d.n, kShape.cols), k_tiles = ceil_div(d.k, kShape.rows);
    uint64_t mine = 0;
    if (first == spec::kFirstAPort) mine = k_tiles * d.m;
    if (first == spec::kFirstBPort) mine = n_tiles * d.k;
    if (first == spec::kFirstCPort && fault.write) mine = n_tiles * d.m;
    if (first == spec::kFirstCPort && !fault.write)
      mine =
          n_tiles * ((d.flags & spec::flag::kAccumulate ? d.m : 0) + (d.flags & spec::flag::kBias ? 1 : 0));
    if (requests + mine > fault.port - first) return i;
    requests += mine;
  }
  return uint32_t(list.size());
}

TEST_P(RtlAxiFaults, EndTheLaunchWithTheAxiErrorCode) {
  const AxiFault fault = GetParam();
  testing::WorkloadOptions options;
  options.shape = kShape;
  options.descriptors = 2;
  options.max_m = 8;
  const testing::Workload workload = testing::make_workload(8, options);
  std::vector<spec::GemmDescriptor> descriptors = workload.rebased(0);
  // The C port reads C only to accumulate.
  if (fault.port >= spec::kFirstCPort && !fault.write)
    for (spec::GemmDescriptor& d : descriptors) d.flags |= spec::flag::kAccumulate;
  Placed placed = place(workload, descriptors);
  Harness sim(placed.memory.data(), placed.memory.size(), {2, 1.0, 1.0, 8});
  if (!fault.write)
    sim.read_port(fault.port).inject_error(0, placed.list, fault.resp);  // every operand beat fails
  else
    sim.write_port(fault.port - spec::kFirstCPort).inject_error(0, placed.list, fault.resp);
  ASSERT_TRUE(launch(sim, placed.list, placed.memory.size(), 1'000'000)) << "the kernel hung";
  EXPECT_EQ(sim.read(reg::kStatus), uint32_t(spec::ErrorCode::kAxiError));
  const uint32_t faulty = first_descriptor_on(fault, descriptors);
  ASSERT_LT(faulty, descriptors.size()) << "the workload never reaches the port";
  EXPECT_EQ(sim.read(reg::kErrorIndex), faulty);
  EXPECT_EQ(sim.read(reg::kControl) & spec::ctrl::kApIdle, spec::ctrl::kApIdle) << "back to idle";
  expect_no_violations(sim);
}

// A SLVERR on the command fetch: the header's beat ends the launch at the
// header; a descriptor's beat, at that descriptor, before anything runs.
TEST(RtlKernel, AnErrorOnTheCommandFetchEndsTheLaunchWhereItHappened) {
  testing::WorkloadOptions options;
  options.shape = kShape;
  options.descriptors = 3;
  options.max_m = 8;
  const testing::Workload workload = testing::make_workload(5, options);
  for (uint32_t record : {0u, 2u}) {  // the header, descriptor 1
    Placed placed = place(workload, workload.rebased(0));
    const std::vector<uint8_t> before = placed.memory;
    Harness sim(placed.memory.data(), placed.memory.size(), {2, 1.0, 1.0, 8});
    const uint64_t beat = placed.list + uint64_t(record) * spec::kBeatBytes;
    sim.read_port(0).inject_error(beat, beat + spec::kBeatBytes, sim::AxiResp::kSlvErr);
    ASSERT_TRUE(launch(sim, placed.list, placed.memory.size(), 100'000)) << "the kernel hung";
    EXPECT_EQ(sim.read(reg::kStatus), uint32_t(spec::ErrorCode::kAxiError)) << "record " << record;
    EXPECT_EQ(sim.read(reg::kErrorIndex), record == 0 ? spec::kHeaderErrorIndex : record - 1);
    EXPECT_EQ(sim.read(reg::kDescriptorsDone), 0u);
    EXPECT_TRUE(placed.memory == before) << "nothing is written before the list is read whole";
    expect_no_violations(sim);
  }
}

INSTANTIATE_TEST_SUITE_P(
    ReadsAndWrites, RtlAxiFaults,
    ::testing::Values(AxiFault{"A0SlvErr", spec::kFirstAPort, false, sim::AxiResp::kSlvErr},
                      AxiFault{"A3DecErr", spec::kFirstAPort + 3, false, sim::AxiResp::kDecErr},
                      AxiFault{"B1SlvErr", spec::kFirstBPort + 1, false, sim::AxiResp::kSlvErr},
                      AxiFault{"B0DecErr", spec::kFirstBPort, false, sim::AxiResp::kDecErr},
                      AxiFault{"C2ReadSlvErr", spec::kFirstCPort + 2, false, sim::AxiResp::kSlvErr},
                      AxiFault{"C0ReadDecErr", spec::kFirstCPort, false, sim::AxiResp::kDecErr},
                      AxiFault{"C3WriteSlvErr", spec::kFirstCPort + 3, true, sim::AxiResp::kSlvErr},
                      AxiFault{"C1WriteDecErr", spec::kFirstCPort + 1, true, sim::AxiResp::kDecErr}),
    [](const ::testing::TestParamInfo<AxiFault>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace systole
