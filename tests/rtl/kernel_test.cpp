// SPDX-License-Identifier: Apache-2.0
// The whole RTL kernel under Verilator (label rtl): AXI4-Lite control, four
// AXI4 masters on sim/'s memory models (latency, back-pressure, protocol
// checks), random command lists (GEMM, the vector engine's opcodes, both
// in one list) compared byte for byte with the reference; malformed
// descriptors and SLVERR responses end the launch with their code.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "Vsystole_kernel.h"
#include "common/engines.h"
#include "common/random_workload.h"
#include "common/vector_workload.h"
#include "kernel_harness.h"
#include "reference/reference.h"
#include "systole/gemm_plan.h"
#include "systole/validate.h"
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

// `records` (64 bytes each) as a command list after `image`, 4 KiB aligned.
Placed place_records(const std::vector<uint8_t>& image, const std::vector<spec::CommandRecord>& records) {
  Placed placed;
  placed.memory = image;
  placed.list = (image.size() + 4095) / 4096 * 4096;
  const auto list = encode_command_lists(records, 1000).at(0);
  placed.memory.resize(placed.list + list.size() + 4096);
  std::memcpy(placed.memory.data() + placed.list, list.data(), list.size());
  return placed;
}

Placed place(const testing::Workload& workload, const std::vector<spec::GemmDescriptor>& descriptors) {
  std::vector<spec::CommandRecord> records;
  for (const auto& d : descriptors) records.push_back(spec::record_of(d));
  return place_records(workload.memory, records);
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

// ---------------------------------------------------------------------------
// The vector engine.

// Four regions of 12 KiB: a to_bf16 of up to 37 rows of 74 values fits one.
constexpr uint64_t kVectorBytes = 4 * 12 * 1024;

// Random lists of every vector opcode (operands at unaligned addresses,
// outputs in place on inputs, awkward values), each opcode twice in a random
// order so that later descriptors read what earlier ones wrote, under
// memory latency and back-pressure; then the same after a GEMM list in one
// launch, so the c ports pass from the GEMM engines to the vector engine
// and back.
TEST(RtlKernel, VectorDescriptorsMatchTheReference) {
  for (uint32_t seed = 1; seed <= 4; ++seed) {
    std::printf("seed %u\n", seed);
    std::mt19937_64 rng(seed);
    const std::vector<uint8_t> image = testing::random_image(rng, kVectorBytes);
    std::vector<spec::VectorDescriptor> list;
    for (int round = 0; round < 2; ++round)
      for (spec::Opcode op : testing::kVectorOpcodes)
        list.push_back(testing::random_descriptor(op, rng, kVectorBytes, /*max_n=*/70));
    std::shuffle(list.begin(), list.end(), rng);
    std::vector<uint8_t> expected = image;
    for (const auto& d : list) reference::vector(d, expected);

    std::vector<spec::CommandRecord> records;
    for (const auto& d : list) records.push_back(spec::record_of(d));
    Placed placed = place_records(image, records);
    Harness sim(placed.memory.data(), placed.memory.size(), {uint32_t(1 + seed % 5), 0.8, 0.8, seed});
    ASSERT_TRUE(launch(sim, placed.list, placed.memory.size(), 5'000'000))
        << "seed " << seed << ": no interrupt";
    EXPECT_EQ(sim.read(reg::kStatus), 0u) << "seed " << seed;
    EXPECT_EQ(sim.read(reg::kDescriptorsDone), list.size());
    EXPECT_EQ(sim.read(reg::kMacsLo), 0u) << "a vector descriptor multiplies no matrices";
    const std::vector<uint8_t> got(placed.memory.begin(), placed.memory.begin() + kVectorBytes);
    EXPECT_EQ(testing::first_difference(expected, got), "") << "seed " << seed;
    expect_no_violations(sim);
  }
}

TEST(RtlKernel, GemmAndVectorDescriptorsShareALaunch) {
  const uint32_t seed = 9;
  std::printf("seed %u\n", seed);
  testing::WorkloadOptions options;
  options.shape = kShape;
  options.descriptors = 3;
  options.max_m = 6;
  const testing::Workload workload = testing::make_workload(seed, options);
  // The vector data after the GEMM workload's image.
  std::mt19937_64 rng(seed);
  const uint64_t base = (workload.memory.size() + 4095) / 4096 * 4096;
  std::vector<uint8_t> image = workload.memory;
  image.resize(base);
  const std::vector<uint8_t> vectors = testing::random_image(rng, kVectorBytes);
  image.insert(image.end(), vectors.begin(), vectors.end());
  std::vector<spec::CommandRecord> records;
  std::vector<spec::VectorDescriptor> list;
  const std::vector<spec::GemmDescriptor> gemms = workload.rebased(0);
  for (std::size_t i = 0; i < gemms.size(); ++i) {
    records.push_back(spec::record_of(gemms[i]));
    spec::VectorDescriptor d =
        testing::random_descriptor(testing::kVectorOpcodes[(3 * i + 6) % 8], rng, kVectorBytes, /*max_n=*/40);
    const spec::VectorOperands operands = spec::vector_operands(spec::Opcode(d.opcode));
    uint64_t* addr[4] = {&d.x_addr, &d.y_addr, &d.z_addr, &d.w_addr};
    for (int k = 0; k < 4; ++k)
      if (operands.uses(k)) *addr[k] += base;
    records.push_back(spec::record_of(d));
    list.push_back(d);
  }
  std::vector<uint8_t> expected = testing::run_reference(workload, kShape.rows).memory;
  expected.resize(base);
  expected.insert(expected.end(), vectors.begin(), vectors.end());
  for (const auto& d : list) reference::vector(d, expected);

  Placed placed = place_records(image, records);
  Harness sim(placed.memory.data(), placed.memory.size(), {3, 0.9, 0.9, seed});
  ASSERT_TRUE(launch(sim, placed.list, placed.memory.size(), 5'000'000)) << "no interrupt";
  EXPECT_EQ(sim.read(reg::kStatus), 0u);
  EXPECT_EQ(sim.read(reg::kDescriptorsDone), records.size());
  const std::vector<uint8_t> got(placed.memory.begin(), placed.memory.begin() + expected.size());
  EXPECT_EQ(testing::first_difference(expected, got), "");
  expect_no_violations(sim);
}

// A malformed vector descriptor (an output overlapping an input) ends the
// launch with its code and index before anything is written.
TEST(RtlKernel, AMalformedVectorDescriptorEndsTheLaunchAndWritesNothing) {
  std::mt19937_64 rng(5);
  const std::vector<uint8_t> image = testing::random_image(rng, kVectorBytes);
  spec::VectorDescriptor good = testing::random_descriptor(spec::Opcode::kAdam, rng, kVectorBytes, 32);
  good.n = 20;
  spec::VectorDescriptor bad = good;
  bad.z_addr = bad.y_addr + 4;  // Adam's two moments overlap
  ASSERT_EQ(spec::validate_vector_descriptor(bad, kVectorBytes, {4, 4, 1024, spec::feature::kVectorEngine}),
            spec::ErrorCode::kOverlappingBuffers);
  Placed placed = place_records(image, {spec::record_of(good), spec::record_of(good), spec::record_of(bad)});
  const std::vector<uint8_t> before = placed.memory;
  Harness sim(placed.memory.data(), placed.memory.size(), {2, 1.0, 1.0, 5});
  ASSERT_TRUE(launch(sim, placed.list, placed.memory.size(), 1'000'000));
  EXPECT_EQ(sim.read(reg::kStatus), uint32_t(spec::ErrorCode::kOverlappingBuffers));
  EXPECT_EQ(sim.read(reg::kErrorIndex), 2u);
  EXPECT_EQ(testing::first_difference(before, placed.memory), "");
  expect_no_violations(sim);
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
