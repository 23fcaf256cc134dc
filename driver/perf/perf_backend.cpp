// SPDX-License-Identifier: Apache-2.0
// The perf backend: how fast the work would run on a board that is not
// here. A sw_emu device with the fast engine computes every launch (the same
// bits as every other backend); the SystemC card model (sim/systemc) times
// it: host-link transfers for buffer syncs, and each launch through the
// cycle model of the RTL controller against the board's HBM. The kernel's
// performance counters read back are the model's, so every tool that
// prints counters prints the board's.
#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../src/backend.h"
#include "card.h"

namespace systole::detail {
namespace {

namespace reg = spec::reg;
using card::Picoseconds;

// The counters the model answers for: each a pair of registers at an
// 8-byte-aligned low word (read_register tells the halves apart by offset).
static_assert(reg::kBusyCyclesLo % 8 == 0 && reg::kStallCyclesLo % 8 == 0 && reg::kDmaReadBytesLo % 8 == 0 &&
              reg::kDmaWriteBytesLo % 8 == 0);

class PerfBackend final : public ForwardingBackend {
 public:
  PerfBackend(std::shared_ptr<DeviceBackend> functional, const card::CardConfig& config, std::string name)
      : ForwardingBackend(std::move(functional)),
        card_(config),
        name_(std::move(name)),
        units_(inner().compute_units()) {
    totals_.board = name_;
    totals_.clock_hz = card_.clock_hz();
    totals_.array_rows = config.shape.rows;
    totals_.array_cols = config.shape.cols;
    totals_.compute_units = config.compute_units;
  }

  std::string name() const override { return name_; }

  Status write_memory(uint64_t address, const void* src, std::size_t bytes) override {
    SYSTOLE_RETURN_IF_ERROR(inner().write_memory(address, src, bytes));
    transfer(src, bytes, true);
    return ok_status();
  }
  Status read_memory(uint64_t address, void* dst, std::size_t bytes) override {
    SYSTOLE_RETURN_IF_ERROR(inner().read_memory(address, dst, bytes));
    transfer(dst, bytes, false);
    return ok_status();
  }

  uint32_t read_register(uint32_t unit, uint32_t offset) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      const Unit& u = units_.at(unit);
      if (u.timed) {
        const spec::PerfCounters& c = u.counters;
        auto half = [&](uint64_t value) { return uint32_t(offset % 8 == 0 ? value : value >> 32); };
        switch (offset & ~4u) {
          case reg::kBusyCyclesLo:
            return half(c.busy_cycles);
          case reg::kStallCyclesLo:
            return half(c.stall_cycles);
          case reg::kDmaReadBytesLo:
            return half(c.dma_read_bytes);
          case reg::kDmaWriteBytesLo:
            return half(c.dma_write_bytes);
          default:
            break;
        }
      }
    }
    return inner().read_register(unit, offset);
  }

  void write_register(uint32_t unit, uint32_t offset, uint32_t value) override {
    if (offset == reg::kControl && (value & spec::ctrl::kApStart)) {
      std::lock_guard<std::mutex> lock(mutex_);
      Unit& u = units_.at(unit);
      u.issued = clock();
      u.pending = true;
      u.timed = false;
    }
    inner().write_register(unit, offset, value);
  }

  bool wait_done(uint32_t unit, std::chrono::milliseconds timeout) override {
    if (!inner().wait_done(unit, timeout)) return false;
    std::lock_guard<std::mutex> lock(mutex_);
    Unit& u = units_.at(unit);
    if (u.pending) time_launch(unit, u);
    clock() = std::max(clock(), u.free);
    return true;
  }

  Result<Projection> projection() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    Projection p = totals_;
    Picoseconds latest = 0;
    for (const auto& [thread, time] : clocks_) latest = std::max(latest, time);
    for (const Unit& u : units_) latest = std::max(latest, u.free);
    p.seconds = double(latest) * 1e-12;
    return p;
  }

 private:
  struct Unit {
    Picoseconds issued = 0;  // ap_start, on its host thread's clock
    Picoseconds free = 0;    // the end of its last launch
    bool pending = false;    // started, not yet timed
    bool timed = false;      // counters below are the last launch's
    spec::PerfCounters counters;
  };

  // The calling host thread's simulated time (mutex_ held).
  Picoseconds& clock() { return clocks_[std::this_thread::get_id()]; }

  void transfer(const void* data, std::size_t bytes, bool to_card) {
    std::lock_guard<std::mutex> lock(mutex_);
    const card::TransferReport report = card_.transfer(clock(), data, bytes, to_card);
    totals_.link_seconds += double(report.end - report.begin) * 1e-12;
    totals_.link_bytes += bytes;
    clock() = report.end;
  }

  // The launch just finished on `unit`, on the board (mutex_ held).
  void time_launch(uint32_t unit, Unit& u) {
    timing::LaunchArguments arguments;
    for (uint32_t port = 0; port < spec::kMemoryPorts; ++port)
      arguments.base[port] = read_register64(inner(), unit, reg::port_base(port));
    arguments.mem_bytes = read_register64(inner(), unit, reg::kMemBytesLo);
    // The list as the kernel's command port reads it. A list the device
    // refused before reading it (misplaced) is timed as its header alone.
    spec::CommandListHeader header{};
    std::vector<uint8_t> list(sizeof header);
    if (inner().read_memory(arguments.command_addr(), list.data(), list.size()).ok()) {
      std::memcpy(&header, list.data(), sizeof header);
      if (header.count <= card_.config().shape.max_descriptors()) {
        list.resize(spec::command_list_bytes(header.count));
        if (!inner().read_memory(arguments.command_addr(), list.data(), list.size()).ok())
          list.resize(sizeof header);
      }
    }
    const Picoseconds begin = std::max(u.issued, u.free);
    const card::LaunchReport report = card_.launch(unit, begin, list.data(), list.size(), arguments);
    u.free = report.end;
    u.counters = report.timing.counters;
    u.pending = false;
    u.timed = true;

    totals_.launch_seconds += double(report.end - report.begin) * 1e-12;
    ++totals_.launches;
    totals_.busy_cycles += report.timing.counters.busy_cycles;
    totals_.macs += report.timing.counters.macs;
    totals_.hbm_wait_cycles += report.hbm_wait_cycles;
    totals_.array_cycles += report.timing.array_cycles;
    if (2 * report.timing.array_cycles >= report.timing.counters.busy_cycles)
      ++totals_.compute_bound;
    else
      ++totals_.memory_bound;
  }

  card::Card card_;
  std::string name_;
  mutable std::mutex mutex_;
  std::vector<Unit> units_;
  std::map<std::thread::id, Picoseconds> clocks_;
  Projection totals_;
};

}  // namespace

Result<std::shared_ptr<DeviceBackend>> open_perf(uint32_t index, const DeviceOptions& options) {
  const card::Board* board = card::find_board(options.perf.board);
  if (!board)
    return Status(StatusCode::kInvalidArgument,
                  "perf: unknown board '" + options.perf.board + "' (known: " + card::board_names() + ")");
  card::CardConfig config;
  config.board = *board;
  config.shape = {options.array_rows, options.array_cols};
  config.shape.features = spec::feature::kVectorEngine;
  config.compute_units = options.compute_units;
  config.clock_mhz = options.perf.clock_mhz;
  config.pcie_gen = options.perf.pcie_gen;
  config.pcie_lanes = options.perf.pcie_lanes;
  config.bank_bytes = options.bank_bytes;
  if (const std::string error = card::check_config(config); !error.empty())
    return Status(StatusCode::kInvalidArgument, "perf: " + error);
  if (options.array_rows > board->largest_array || options.array_cols > board->largest_array)
    return Status(StatusCode::kInvalidArgument,
                  "perf: a " + std::to_string(options.array_rows) + "x" + std::to_string(options.array_cols) +
                      " array does not fit " + board->name + " (largest: " +
                      std::to_string(board->largest_array) + "x" + std::to_string(board->largest_array) +
                      "; board 'hypothetical' models a part that fits 128x128)");
  DeviceOptions functional_options = options;
  functional_options.engine = EmuEngine::kFast;
  auto functional = open_sw_emu(index, functional_options);
  if (!functional.ok()) return Status(functional.status().code(), "perf: " + functional.status().message());
  std::ostringstream name;
  name << "perf[" << index << "] " << board->name << " " << options.compute_units << " x "
       << options.array_rows << "x" << options.array_cols << " at "
       << (options.perf.clock_mhz > 0 ? options.perf.clock_mhz : board->clock_mhz) << " MHz";
  auto backend = std::make_shared<PerfBackend>(std::move(functional).value(), config, name.str());
  return std::shared_ptr<DeviceBackend>(std::move(backend));
}

}  // namespace systole::detail
