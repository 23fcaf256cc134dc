// SPDX-License-Identifier: Apache-2.0
// The small boards' design: systole_lite_top, the compact kernel behind the
// UART link, driven by the uart backend through a software UART on its
// line, as accel_gemm drives a board. Built three times: on the Verilated
// RTL at 2x1 (label rtl); on the post-synthesis netlist of iCE40 cells at
// the bitstream's 1x1 (label fpga, SYSTOLE_LITE_NETLIST); and on the
// bitstream's own netlist, the board's top with its clock divider and
// power-on reset, ticked at the board's 12 MHz (label fpga,
// SYSTOLE_LITE_BOARD). Random command lists
// leave the same bits as the HLS kernel at the same array size; malformed
// ones get the code and index hw/spec's validation gives and write nothing;
// the register file refuses what the board cannot do.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#if SYSTOLE_LITE_BOARD
#include "Vboard_netlist.h"
using Model = Vboard_netlist;
constexpr uint32_t kRows = 1, kCols = 1;  // the bitstream's (hw/fpga/ice40)
constexpr uint32_t kSeeds = 1;            // 105 clocks a bit: slow to simulate
constexpr uint32_t kClksPerBit = 3 * 35;  // 12 MHz clocks: 35 core clocks of 3
constexpr uint64_t kClksPerCycle = 3;     // 12 MHz clocks a core clock
#elif SYSTOLE_LITE_NETLIST
#include "Vlite_netlist.h"
using Model = Vlite_netlist;
constexpr uint32_t kRows = 1, kCols = 1;  // the bitstream's (hw/fpga/ice40)
constexpr uint32_t kSeeds = 4;            // the netlist simulates slowly
constexpr uint32_t kClksPerBit = 4;       // the test build's parameter
constexpr uint64_t kClksPerCycle = 1;     // the model's clock is the core's
#else
#include "Vsystole_lite_top.h"
using Model = Vsystole_lite_top;
constexpr uint32_t kRows = 2, kCols = 1;  // the top's default
constexpr uint32_t kSeeds = 12;
constexpr uint32_t kClksPerBit = 4;    // the test build's parameter
constexpr uint64_t kClksPerCycle = 1;  // the model's clock is the core's
#endif
#include "common/engines.h"
#include "common/random_workload.h"
#include "soft_uart.h"
#include "systole/gemm_plan.h"
#include "systole/validate.h"
#include "systole_kernel.h"
#include "uart_backend.h"

namespace systole {
namespace {

constexpr uint32_t kBaud = 115200;
constexpr uint64_t kMemBytes = 128 << 10;              // the top's default, as the UP5K's SPRAM
constexpr spec::ArrayShape kShape{kRows, kCols, 256};  // MaxM: the top's default

using Board = testing::SoftUart<Model, kClksPerBit>;

// Whether the top shows a launch running: the board's red LED, else busy_o.
bool launch_shown(const Model& top) {
#if SYSTOLE_LITE_BOARD
  return !top.led_red_no;
#else
  return top.busy_o;
#endif
}

// The simulated board as the uart backend's serial port. Timeouts are
// simulated time: the line's bits at kBaud, kClksPerBit cycles each.
class SimulatedPort : public uart::SerialPort {
 public:
  explicit SimulatedPort(Board* board) : board_(board) {}
  std::string name() const override { return "simulated board"; }
  Status write(const uint8_t* data, std::size_t size) override {
    board_->send(data, size);
    return ok_status();
  }
  Status read(uint8_t* data, std::size_t size, std::chrono::milliseconds timeout) override {
    const uint64_t cycles = uint64_t(timeout.count()) * kBaud * kClksPerBit / 1000;
    const std::vector<uint8_t> bytes = board_->receive(size, cycles);
    std::memcpy(data, bytes.data(), bytes.size());
    if (bytes.size() < size) return Status(StatusCode::kTimeout, "the simulated board did not answer");
    return ok_status();
  }
  void discard_input() override { board_->discard_output(); }

 private:
  Board* board_;
};

// A device on a fresh simulated board.
struct SimulatedDevice {
  SimulatedDevice() {
    auto owned = std::make_unique<Board>();
    board = owned.get();
    holder = std::move(owned);
#if SYSTOLE_LITE_BOARD
    // The board's power-on reset: the green LED lights as it ends.
    for (int clock = 0; clock < 1000 && board->model().led_green_no; ++clock) board->idle(1);
    EXPECT_FALSE(board->model().led_green_no) << "the power-on reset never ended";
#endif
    UartOptions options;
    options.baud = kBaud;
    options.memory_bytes = kMemBytes;
    backend = uart::make_uart_backend(std::make_unique<SimulatedPort>(board), options);
    Result<Device> opened = detail::attach_device(backend, "uart", 0);
    EXPECT_TRUE(opened.ok()) << opened.status().to_string();
    if (opened.ok()) device = *opened;
  }

  std::unique_ptr<Board> holder;  // outlives the backend's port
  Board* board = nullptr;
  std::shared_ptr<detail::DeviceBackend> backend;
  Device device;
};

// The HLS kernel at the board's array size on the same image: `memory` at
// address 0, `list` at kMemBytes (outside every operand's window).
testing::Outcome run_hls(const std::vector<uint8_t>& memory, const std::vector<uint8_t>& list) {
  std::vector<uint8_t> image(kMemBytes + list.size() + 64, 0);
  std::memcpy(image.data(), memory.data(), memory.size());
  std::memcpy(image.data() + kMemBytes, list.data(), list.size());
  uint64_t bases[spec::kMemoryPorts] = {kMemBytes};
  auto onchip = std::make_unique<hls_kernel::OnChip<kShape.rows, kShape.cols>>();
  const hls_kernel::LaunchResult result =
      hls_kernel::systole_kernel(hls_kernel::ports_at(image.data(), bases), kMemBytes, *onchip,
                                 /*features=*/0);  // the compact kernel has no vector engine
  testing::Outcome outcome;
  outcome.memory.assign(image.begin(), image.begin() + memory.size());
  outcome.error = result.status;
  outcome.error_index = result.error_index;
  outcome.counters = result.counters;
  return outcome;
}

TEST(Lite, IdentifiesAsTheCompactKernel) {
  SimulatedDevice board;
  const DeviceInfo& info = board.device.info();
  EXPECT_EQ(info.name, "uart[simulated board]");
  EXPECT_EQ(info.shape.rows, kShape.rows);
  EXPECT_EQ(info.shape.cols, kShape.cols);
  EXPECT_EQ(info.max_m, kShape.max_m());
  EXPECT_EQ(info.max_n, kShape.max_n());
  EXPECT_EQ(info.max_k, kShape.max_k());
  EXPECT_EQ(info.beat_bytes, 4u);
  EXPECT_EQ(info.hbm_banks * info.bank_bytes, kMemBytes);
  EXPECT_FALSE(board.board->assertion_failed());
}

TEST(Lite, RandomListsMatchTheHlsKernelToTheBit) {
  const testing::Values values[] = {testing::Values::kTypical, testing::Values::kCancelling,
                                    testing::Values::kExtreme};
  // SYSTOLE_LITE_SEEDS=N runs more (the slow label's longer run).
  const char* more = std::getenv("SYSTOLE_LITE_SEEDS");
  const uint32_t seeds = more ? uint32_t(std::strtoul(more, nullptr, 10)) : kSeeds;
  for (uint32_t seed = 1; seed <= seeds; ++seed) {
    const testing::Values value = values[seed % 3];
    std::printf("seed %u (%s values)\n", seed, testing::values_name(value));
    testing::WorkloadOptions options;
    options.shape = kShape;
    options.descriptors = 6;
    options.values = value;
    options.max_m = 24;
    const testing::Workload workload = testing::make_workload(seed, options);
    ASSERT_LE(workload.memory.size() + 4096, kMemBytes) << "seed " << seed << ": the image fits the board";
    const auto list = encode_command_lists(workload.rebased(0), kShape.max_descriptors()).at(0);

    SimulatedDevice board;
    uint64_t shown = 0;  // clocks the launch is shown (busy_o, or the board's red LED)
    board.board->watch([&](const Model& model) { shown += launch_shown(model); });
    const testing::Outcome lite = testing::run_on_device(board.device, workload.memory, list);
    const testing::Outcome hls = run_hls(workload.memory, list);
    ASSERT_TRUE(lite.status.ok()) << "seed " << seed << ": " << lite.status.to_string() << "\n"
                                  << workload.description;
    EXPECT_EQ(hls.error, spec::ErrorCode::kOk);
    EXPECT_EQ(testing::first_difference(hls.memory, lite.memory), "") << "seed " << seed << "\n"
                                                                      << workload.description;
    EXPECT_EQ(lite.counters.macs, hls.counters.macs);
    EXPECT_EQ(lite.counters.descriptors_done, workload.descriptors.size());
    EXPECT_GT(lite.counters.busy_cycles, lite.counters.macs / (kShape.rows * kShape.cols));
    EXPECT_EQ(shown, kClksPerCycle * lite.counters.busy_cycles) << "seed " << seed;
    EXPECT_FALSE(board.board->assertion_failed()) << "seed " << seed;
    std::printf("  %llu MACs in %llu cycles, %llu simulated cycles in all\n",
                (unsigned long long)lite.counters.macs, (unsigned long long)lite.counters.busy_cycles,
                (unsigned long long)board.board->cycles());
  }
}

// A valid two-descriptor list (A, B, bias and C in the first 512 bytes) for
// the malformed-list cases to break.
struct ListCase {
  const char* name;
  std::function<void(spec::CommandListHeader&, spec::GemmDescriptor&)> mutate;
};

TEST(Lite, MalformedListsGetTheSpecsErrorAndWriteNothing) {
  spec::GemmDescriptor good{};
  good.opcode = uint8_t(spec::Opcode::kGemm);
  good.flags = spec::flag::kBias | spec::flag::kRelu;
  good.m = 3, good.n = 2, good.k = 5, good.lda = 5, good.ldb = 2, good.ldc = 2;
  good.a_addr = 0, good.b_addr = 64, good.bias_addr = 128, good.c_addr = 256;
  const uint32_t mem = uint32_t(kMemBytes);
  const ListCase cases[] = {
      {"bad magic", [](auto& h, auto&) { h.magic ^= 1; }},
      {"bad version", [](auto& h, auto&) { h.version_major = 3; }},
      {"no descriptors", [](auto& h, auto&) { h.count = 0; }},
      {"too many descriptors", [](auto& h, auto&) { h.count = kShape.max_descriptors() + 1; }},
      {"header reserved word", [](auto& h, auto&) { h.reserved[12] = 1; }},
      {"opcode", [](auto&, auto& d) { d.opcode = 2; }},
      {"reserved flag", [](auto&, auto& d) { d.flags |= 0x40; }},
      {"reserved0", [](auto&, auto& d) { d.reserved0 = 1; }},
      {"reserved1 after a bad m", [](auto&, auto& d) { d.reserved1 = 1, d.m = 0; }},
      {"m zero", [](auto&, auto& d) { d.m = 0; }},
      {"m above the board's limit", [](auto&, auto& d) { d.m = kShape.max_m() + 1, d.lda = 5; }},
      {"n above the limit", [](auto&, auto& d) { d.n = kShape.max_n() + 1; }},
      {"k above the limit", [](auto&, auto& d) { d.k = kShape.max_k() + 1, d.lda = 40; }},
      {"lda below k", [](auto&, auto& d) { d.lda = 4; }},
      {"ldb below n", [](auto&, auto& d) { d.ldb = 1; }},
      {"ldc below n", [](auto&, auto& d) { d.ldc = 1; }},
      {"a misaligned", [](auto&, auto& d) { d.a_addr = 1; }},
      {"c misaligned (fp32)", [](auto&, auto& d) { d.c_addr = 258; }},
      {"bias misaligned", [](auto&, auto& d) { d.bias_addr = 130; }},
      {"a's high word", [](auto&, auto& d) { d.a_addr |= uint64_t(1) << 32; }},
      {"b past the end", [mem](auto&, auto& d) { d.b_addr = mem - 8; }},
      {"c's rows past the end", [mem](auto&, auto& d) { d.ldc = mem / 8; }},
      {"lda of 2^20", [](auto&, auto& d) { d.lda = 1u << 20; }},
      {"bias past the end", [mem](auto&, auto& d) { d.bias_addr = mem - 4; }},
      {"out of range and misaligned", [mem](auto&, auto& d) { d.b_addr = mem, d.c_addr = 2; }},
  };
  std::vector<uint8_t> memory(512);  // every operand of `good` lies here
  std::mt19937 rng(7);
  std::printf("seed 7\n");
  for (uint8_t& byte : memory) byte = uint8_t(rng());
  for (const ListCase& c : cases) {
    // A descriptor's case breaks descriptor 0, then 1; a header's once.
    bool header_case = false;
    for (uint32_t which = 0; which < 2 && !(which == 1 && header_case); ++which) {
      spec::CommandListHeader header = spec::command_list_header(2);
      const spec::CommandListHeader intact = header;
      spec::GemmDescriptor d[2] = {good, good};
      c.mutate(header, d[which]);
      header_case = std::memcmp(&header, &intact, sizeof header) != 0;
      std::vector<uint8_t> list(3 * 64);
      spec::encode(header, list.data());
      spec::encode(d[0], list.data() + 64);
      spec::encode(d[1], list.data() + 128);

      spec::ErrorCode expected = spec::validate_header(header, kShape);
      uint32_t expected_index = spec::kHeaderErrorIndex;
      for (uint32_t i = 0; expected == spec::ErrorCode::kOk && i < 2; ++i) {
        expected = spec::validate_descriptor(d[i], kMemBytes, kShape);
        expected_index = i;
      }
      ASSERT_NE(expected, spec::ErrorCode::kOk) << c.name;

      SimulatedDevice board;
      const testing::Outcome lite = testing::run_on_device(board.device, memory, list);
      EXPECT_EQ(lite.status.code(), StatusCode::kDeviceError) << c.name << ": " << lite.status.to_string();
      EXPECT_EQ(std::string(spec::error_code_name(lite.error)), spec::error_code_name(expected)) << c.name;
      EXPECT_EQ(lite.error_index, expected_index) << c.name << ", descriptor " << which;
      EXPECT_EQ(testing::first_difference(memory, lite.memory), "") << c.name << ": nothing written";
      EXPECT_FALSE(board.board->assertion_failed()) << c.name;
    }
  }
}

TEST(Lite, RegistersRefuseWhatTheBoardCannotDo) {
  namespace reg = spec::reg;
  // Every port base is 0 and the window at most the memory: the write of
  // anything else is refused, and the backend says so.
  const std::pair<uint32_t, uint32_t> refused[] = {
      {reg::port_base(1), 64},
      {reg::port_base(spec::kMemoryPorts - 1) + 4, 1},
      {reg::kMemBytesLo, uint32_t(kMemBytes) + 4},
      {reg::kMemBytesHi, 1},
      {reg::kCommandAddrLo, uint32_t(kMemBytes)},
      {reg::kStatus, 0},
  };
  for (const auto& [offset, value] : refused) {
    SimulatedDevice board;
    board.backend->write_register(0, offset, value);
    const Status status = board.backend->link_status();
    EXPECT_EQ(status.code(), StatusCode::kDeviceError) << "offset " << offset;
    EXPECT_NE(status.message().find("register_error"), std::string::npos) << status.to_string();
  }
  SimulatedDevice board;
  board.backend->write_register(0, reg::kMemBytesLo, uint32_t(kMemBytes));
  board.backend->write_register(0, reg::port_base(3), 0);
  EXPECT_TRUE(board.backend->link_status().ok()) << board.backend->link_status().to_string();
  EXPECT_EQ(board.backend->read_register(0, reg::kMemBytesLo), kMemBytes);
}

// A port on which nothing ever answers (a board unconfigured, or off).
class SilentPort : public uart::SerialPort {
 public:
  std::string name() const override { return "silent port"; }
  Status write(const uint8_t*, std::size_t) override { return ok_status(); }
  Status read(uint8_t*, std::size_t, std::chrono::milliseconds) override {
    return Status(StatusCode::kTimeout, "nothing came");
  }
  void discard_input() override {}
};

TEST(UartBackend, ABoardThatDoesNotAnswerEndsInAnErrorNotAHang) {
  auto backend = uart::make_uart_backend(std::make_unique<SilentPort>(), UartOptions{});
  const Result<Device> device = detail::attach_device(backend, "uart", 0);
  ASSERT_FALSE(device.ok());
  EXPECT_EQ(device.status().code(), StatusCode::kTimeout) << device.status().to_string();
  EXPECT_NE(device.status().message().find("silent port"), std::string::npos) << device.status().to_string();
  // The failure stays: later accesses are skipped and report it.
  EXPECT_EQ(backend->read_register(0, spec::reg::kId), 0u);
  EXPECT_FALSE(backend->link_status().ok());
}

TEST(UartBackend, WithoutABoardTheErrorNamesThePort) {
  DeviceOptions options;
  options.uart.port = "/dev/ttySystoleAbsent";
  const Result<Device> absent = Device::open("uart", 0, options);
  ASSERT_FALSE(absent.ok());
  EXPECT_NE(absent.status().message().find("/dev/ttySystoleAbsent"), std::string::npos)
      << absent.status().to_string();
  options.uart.port = "/dev/null";  // not a serial port
  const Result<Device> not_serial = Device::open("uart", 0, options);
  ASSERT_FALSE(not_serial.ok());
  EXPECT_NE(not_serial.status().message().find("not a serial port"), std::string::npos)
      << not_serial.status().to_string();
  options.uart.baud = 12345;
  EXPECT_NE(Device::open("uart", 0, options).status().message().find("not a standard rate"),
            std::string::npos);
}

}  // namespace
}  // namespace systole
