// SPDX-License-Identifier: Apache-2.0
// The perf backend: how fast the work would run on a board that is not
// here. A sw_emu device with the fast engine computes every launch (the same
// bits as every other backend); the SystemC card model (sim/systemc) times
// it: host-link transfers for buffer syncs, and each launch through the
// cycle model of the RTL controller against the board's HBM. Each host
// thread's requests are timed in simulated-time order together with the
// other threads' when the projection is read, so it does not depend on the
// order the machine ran the threads in. The kernel's performance counters
// read back are the model's, so every tool that prints counters prints the
// board's.
#include <algorithm>
#include <cstring>
#include <deque>
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

class PerfBackend final : public ForwardingBackend, public CardModelBackend {
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
    card::CardConfig alone = config;
    alone.compute_units = 1;
    for (Unit& u : units_) u.alone = std::make_unique<card::Card>(alone);
  }

  std::string name() const override { return name_; }

  Status write_memory(uint64_t address, const void* src, std::size_t bytes) override {
    SYSTOLE_RETURN_IF_ERROR(inner().write_memory(address, src, bytes));
    log({Op::kTransfer, true, 0, bytes});
    return ok_status();
  }
  Status read_memory(uint64_t address, void* dst, std::size_t bytes) override {
    SYSTOLE_RETURN_IF_ERROR(inner().read_memory(address, dst, bytes));
    log({Op::kTransfer, false, 0, bytes});
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
      capture_launch(unit, units_.at(unit));
      log_locked({Op::kStart, false, unit, 0});
    }
    inner().write_register(unit, offset, value);
  }

  bool wait_done(uint32_t unit, std::chrono::milliseconds timeout) override {
    if (!inner().wait_done(unit, timeout)) return false;
    std::lock_guard<std::mutex> lock(mutex_);
    Unit& u = units_.at(unit);
    u.timed = true;
    log_locked({Op::kWait, false, unit, u.replayed + u.launches.size()});
    return true;
  }

  CardModelBackend* card_model() override { return this; }
  void meet_host_threads(uint32_t threads) override { log({Op::kMeet, false, 0, threads}); }

  Projection projection() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    replay();
    Projection p = totals_;
    Picoseconds latest = 0;
    for (const auto& [thread, timeline] : timelines_) latest = std::max(latest, timeline.clock);
    for (const Unit& u : units_) latest = std::max(latest, u.free);
    p.seconds = double(latest) * 1e-12;
    return p;
  }

 private:
  // What a host thread asked of the card, in its order. The card's shared
  // parts (the host link; HBM pseudo-channels that several units reach)
  // serve requests in simulated-time order, but host threads arrive in
  // whatever order the machine runs them: so each thread's requests are
  // logged as they come and timed later, all threads' together, earliest
  // simulated time first (replay). The projection is then the same for
  // every run of the same work.
  struct Op {
    enum Kind : uint8_t {
      kTransfer,  // `count` bytes over the host link, to the card or from it
      kStart,     // ap_start on `unit`
      kWait,      // the thread waits for `unit`'s first `count` launches
      kMeet,      // the thread meets `count` threads (meet_host_threads)
    } kind;
    bool to_card;
    uint32_t unit;
    uint64_t count;  // kTransfer: bytes; kWait: launches; kMeet: threads
  };
  struct Timeline {
    std::deque<Op> ops;     // not yet timed
    Picoseconds clock = 0;  // simulated time after the timed ones
    // Ties in simulated time go to the thread that drives the lowest unit
    // (its first kStart's, known once logged), so that they are broken the
    // same way each run.
    uint32_t key = kNoKey;
  };
  static constexpr uint32_t kNoKey = ~0u;
  // A launch as the kernel's command port reads it: what the card model
  // times.
  struct Launch {
    std::vector<uint8_t> list;
    timing::LaunchArguments arguments;
  };
  struct Unit {
    std::deque<Launch> launches;  // started, not yet timed by replay
    uint64_t replayed = 0;        // launches timed by replay
    Picoseconds free = 0;         // the end of its last replayed launch
    // The counters a launch reads back: its own timing on a card it has to
    // itself (the model of this card with one unit, its launches back to
    // back), known when it starts. The projection's timing of the same
    // launch (replay) adds the other units' contention, which depends on
    // work the other threads may not have asked for yet.
    std::unique_ptr<card::Card> alone;
    Picoseconds alone_free = 0;
    bool timed = false;  // finished: counters below are its last launch's
    spec::PerfCounters counters;
  };

  void log(const Op& op) {
    std::lock_guard<std::mutex> lock(mutex_);
    log_locked(op);
  }
  void log_locked(const Op& op) {
    Timeline& timeline = timelines_[std::this_thread::get_id()];
    if (op.kind == Op::kStart && timeline.key == kNoKey) timeline.key = op.unit;
    timeline.ops.push_back(op);
    // Bounded memory where the projection is never read: an earlier replay
    // only loses the order of requests still to come.
    if (++logged_ >= kReplayEvery) replay();
  }
  static constexpr uint64_t kReplayEvery = 1 << 20;

  // The launch about to start on `unit`: keeps it for replay and times it
  // alone for its counters (mutex_ held).
  void capture_launch(uint32_t unit, Unit& u) {
    Launch& launch = u.launches.emplace_back();
    timing::LaunchArguments& arguments = launch.arguments;
    for (uint32_t port = 0; port < spec::kMemoryPorts; ++port)
      arguments.base[port] = read_register64(inner(), unit, reg::port_base(port));
    arguments.mem_bytes = read_register64(inner(), unit, reg::kMemBytesLo);
    // The list as the kernel's command port reads it. A list the device
    // refused before reading it (misplaced) is timed as its header alone.
    spec::CommandListHeader header{};
    std::vector<uint8_t>& list = launch.list;
    list.resize(sizeof header);
    if (inner().read_memory(arguments.command_addr(), list.data(), list.size()).ok()) {
      std::memcpy(&header, list.data(), sizeof header);
      if (header.count <= card_.config().shape.max_descriptors()) {
        list.resize(spec::command_list_bytes(header.count));
        if (!inner().read_memory(arguments.command_addr(), list.data(), list.size()).ok())
          list.resize(sizeof header);
      }
    }
    const card::LaunchReport report = u.alone->launch(0, u.alone_free, list.data(), list.size(), arguments);
    u.alone_free = report.end;
    u.counters = report.timing.counters;
    u.timed = false;
  }

  // When `op` would start on `timeline`'s clock, and whether it can be
  // timed yet: a wait once the launches it waits for are (they may be
  // another thread's), a meeting once all its threads are at it.
  Picoseconds start_of(const Timeline& timeline, const Op& op) const {
    return op.kind == Op::kStart ? std::max(timeline.clock, units_[op.unit].free) : timeline.clock;
  }
  bool ready(const Op& op) const {
    switch (op.kind) {
      case Op::kWait:
        return units_[op.unit].replayed >= op.count;
      case Op::kMeet:
        return meeting().size() >= op.count;
      default:
        return true;
    }
  }
  // The threads at a meeting: those whose next request is one.
  std::vector<Timeline*> meeting() const {
    std::vector<Timeline*> at;
    for (auto& [thread, timeline] : timelines_)
      if (!timeline.ops.empty() && timeline.ops.front().kind == Op::kMeet) at.push_back(&timeline);
    return at;
  }

  // Times the logged requests of every thread, earliest first. A thread
  // waiting for a launch not yet timed waits until it is: whatever it asks
  // next comes after that launch's end (mutex_ held).
  void replay() const {
    logged_ = 0;
    for (;;) {
      Timeline* next = nullptr;
      Picoseconds next_start = 0;
      for (auto& [thread, timeline] : timelines_) {
        if (timeline.ops.empty() || !ready(timeline.ops.front())) continue;
        const Picoseconds start = start_of(timeline, timeline.ops.front());
        if (!next || start < next_start || (start == next_start && timeline.key < next->key)) {
          next = &timeline;
          next_start = start;
        }
      }
      if (!next) return;
      const Op op = next->ops.front();
      if (op.kind == Op::kMeet) {
        // Everyone at the meeting (this thread among them) leaves it at the
        // latest of their times. (Found before any leaves: a thread's next
        // request may be the next meeting.)
        const std::vector<Timeline*> met = meeting();
        Picoseconds latest = 0;
        for (const Timeline* t : met) latest = std::max(latest, t->clock);
        for (Timeline* t : met) {
          t->clock = latest;
          t->ops.pop_front();
        }
        continue;
      }
      next->ops.pop_front();
      if (op.kind == Op::kTransfer) {
        const card::TransferReport report = card_.transfer(next->clock, op.count, op.to_card);
        totals_.link_seconds += double(report.end - report.begin) * 1e-12;
        totals_.link_bytes += op.count;
        next->clock = report.end;
      } else if (op.kind == Op::kStart) {
        time_launch(op.unit, next_start);
      } else {
        next->clock = std::max(next->clock, units_[op.unit].free);  // kWait
      }
    }
  }

  // The next launch of `unit`, begun at `begin` on the card (mutex_ held).
  void time_launch(uint32_t unit, Picoseconds begin) const {
    Unit& u = units_[unit];
    const Launch& launch = u.launches.front();
    const card::LaunchReport report =
        card_.launch(unit, begin, launch.list.data(), launch.list.size(), launch.arguments);
    u.launches.pop_front();
    ++u.replayed;
    u.free = report.end;

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

  // projection() is const to its callers, but first times what the
  // threads have asked for since the last one: the model's state below is
  // the replay's.
  mutable card::Card card_;
  std::string name_;
  mutable std::mutex mutex_;
  mutable std::vector<Unit> units_;
  mutable std::map<std::thread::id, Timeline> timelines_;
  mutable uint64_t logged_ = 0;
  mutable Projection totals_;
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
