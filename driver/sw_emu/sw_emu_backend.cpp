// SPDX-License-Identifier: Apache-2.0
// The sw_emu backend: device memory in host memory, and per compute unit a
// register file and a worker thread that runs the kernel when ap_start is
// written — either the hw/hls kernel compiled natively or the fast bit-exact
// engine, which shares the kernel's command-list walker and validation.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "../src/backend.h"
#include "../src/bank_allocator.h"
#include "../src/device_memory.h"
#include "fast_gemm.h"
#include "fast_vector.h"
#include "systole_kernel.h"

namespace systole::detail {
namespace {

static_assert(DeviceMemory::kSlackBytes >= sw_emu::kFastGemmReadSlack,
              "the fast engine may read past an operand at the end of device memory");

using hls_kernel::Beat;
using hls_kernel::LaunchResult;
namespace reg = spec::reg;

// One compute unit's AXI4-Lite registers, indexed by offset / 4.
using RegisterFile = std::array<uint32_t, reg::kMapEnd / 4>;

// The same, as the host and the unit share it: the argument and result
// registers are read and written without the unit's lock (a launch takes
// some 45 register accesses). The lock that ap_start and ap_done are
// exchanged under orders them: arguments written before ap_start are seen
// by the launch, results written before ap_done by the host that saw it.
using SharedRegisterFile = std::array<std::atomic<uint32_t>, reg::kMapEnd / 4>;

// Runs one command list, whose ports start at device addresses `bases`
// (bases[0]: the list, in the banks; launch() has checked them).
class KernelEngine {
 public:
  virtual ~KernelEngine() = default;
  virtual LaunchResult run(const uint64_t (&bases)[spec::kMemoryPorts], uint64_t mem_bytes) = 0;
};

// The hw/hls kernel compiled natively: its ports reach the banks.
template <uint32_t Rows, uint32_t Cols>
class HlsEngine final : public KernelEngine {
 public:
  HlsEngine(uint32_t features, const EmulatedMemory& memory) : features_(features), memory_(memory) {}
  LaunchResult run(const uint64_t (&bases)[spec::kMemoryPorts], uint64_t mem_bytes) override {
    return hls_kernel::systole_kernel(hls_kernel::ports_at(memory_.base(), bases), mem_bytes, *onchip_,
                                      features_);
  }

 private:
  uint32_t features_;
  const EmulatedMemory& memory_;
  std::unique_ptr<hls_kernel::OnChip<Rows, Cols>> onchip_ =
      std::make_unique<hls_kernel::OnChip<Rows, Cols>>();
};

// The fast engine: its GEMMs reach the banks and imported host memory
// (EmulatedMemory::reach), its vector descriptors the banks.
class FastEngine final : public KernelEngine {
 public:
  FastEngine(spec::ArrayShape shape, uint32_t threads, const EmulatedMemory& memory)
      : shape_(shape), team_sizer_(threads), memory_(memory) {}

  // A group's ports reach the same memory: the first of each serves it.
  LaunchResult run(const uint64_t (&bases)[spec::kMemoryPorts], uint64_t mem_bytes) override {
    const uint64_t a_base = bases[spec::kFirstAPort], b_base = bases[spec::kFirstBPort],
                   c_base = bases[spec::kFirstCPort];
    // A GEMM's operands where the engine works on them; all null if any
    // lies out of its reach. A's loads may read a little past it.
    struct Operands {
      const uint8_t *a, *b, *bias;
      uint8_t* c;
      bool reached() const { return a && b && c && bias; }
    };
    auto gemm_operands = [&](const spec::GemmDescriptor& d) {
      const bool bias = d.flags & spec::flag::kBias;
      return Operands{
          memory_.reach(a_base + d.a_addr, spec::matrix_span_bytes(d.m, d.k, d.lda, spec::kBf16Bytes),
                        sw_emu::kFastGemmReadSlack),
          memory_.reach(b_base + d.b_addr, spec::matrix_span_bytes(d.k, d.n, d.ldb, spec::kBf16Bytes)),
          bias ? memory_.reach(c_base + d.bias_addr, uint64_t(d.n) * spec::kFp32Bytes) : memory_.base(),
          memory_.reach(c_base + d.c_addr,
                        spec::matrix_span_bytes(d.m, d.n, d.ldc, spec::output_element_bytes(d.flags)))};
    };
    auto vector_in_banks = [&](const spec::VectorDescriptor& d) {
      const spec::VectorOperands operands = spec::vector_operands(spec::Opcode(d.opcode));
      const uint64_t addresses[4] = {a_base + d.x_addr, c_base + d.y_addr, c_base + d.z_addr,
                                     c_base + d.w_addr};
      for (int i = 0; i < 4; ++i)
        if (operands.uses(i) &&
            !spec::in_range(addresses[i], spec::vector_operand_bytes(d, i), memory_.bytes()))
          return false;
      return true;
    };
    hls_kernel::Ports ports{};
    ports.cmd = reinterpret_cast<Beat*>(memory_.base() + bases[0]);
    return hls_kernel::run_command_list(
        ports, mem_bytes, shape_,
        [&](const spec::GemmDescriptor& d, spec::PerfCounters& counters) {
          const Operands at = gemm_operands(d);
          const sw_emu::FastGemmArgs args = sw_emu::fast_gemm_args(d, at.a, at.b, at.c, at.bias, shape_.rows);
          const uint64_t macs = uint64_t(d.m) * d.n * d.k;
          const uint32_t team = team_sizer_.team(macs);
          const bool timed = team_sizer_.timing(macs, team);
          const auto started =
              timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
          sw_emu::fast_gemm(args, team);
          if (timed)
            team_sizer_.record(
                macs, team,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
          counters.macs += macs;
          counters.busy_cycles += hls_kernel::array_schedule_cycles(d, shape_);
          hls_kernel::add_descriptor_traffic(d, shape_, counters);
        },
        [&](const spec::VectorDescriptor& d, spec::PerfCounters& counters) {
          sw_emu::fast_vector(d, memory_.base() + a_base, memory_.base() + c_base, counters);
        },
        [&](const uint8_t* record) {
          if (spec::is_vector_opcode(record[0]))
            return vector_in_banks(spec::decode<spec::VectorDescriptor>(record));
          return gemm_operands(spec::decode<spec::GemmDescriptor>(record)).reached();
        });
  }

 private:
  spec::ArrayShape shape_;
  sw_emu::TeamSizer team_sizer_;
  const EmulatedMemory& memory_;
};

std::unique_ptr<KernelEngine> make_hls_engine(spec::ArrayShape shape, const EmulatedMemory& memory) {
#define SYSTOLE_BOARD_ENGINE(r, c) \
  if (shape.rows == r && shape.cols == c) return std::make_unique<HlsEngine<r, c>>(shape.features, memory);
  SYSTOLE_BOARD_SHAPES(SYSTOLE_BOARD_ENGINE)
#undef SYSTOLE_BOARD_ENGINE
  if (shape.rows != shape.cols) return nullptr;
  switch (shape.rows) {
#define SYSTOLE_HLS_ENGINE(size) \
  case size:                     \
    return std::make_unique<HlsEngine<size, size>>(shape.features, memory);
    SYSTOLE_ARRAY_SIZES(SYSTOLE_HLS_ENGINE)
#undef SYSTOLE_HLS_ENGINE
    default:
      return nullptr;
  }
}

bool is_supported(spec::ArrayShape shape) {
  return std::any_of(std::begin(spec::kSupportedShapes), std::end(spec::kSupportedShapes),
                     [&](spec::ArrayShape s) { return s.rows == shape.rows && s.cols == shape.cols; });
}

bool is_board_shape(spec::ArrayShape shape) {
#define SYSTOLE_BOARD_MATCH(r, c) (shape.rows == r && shape.cols == c) ||
  return SYSTOLE_BOARD_SHAPES(SYSTOLE_BOARD_MATCH) false;
#undef SYSTOLE_BOARD_MATCH
}

class SwEmuBackend final : public EmulatedBackend {
 public:
  SwEmuBackend(uint32_t index, const DeviceOptions& options)
      : EmulatedBackend(options.hbm_banks, options.bank_bytes),
        shape_{options.array_rows, options.array_cols, spec::ArrayShape{}.m_limit, options.sw_emu_features} {
    threads_ = options.threads_per_unit ? options.threads_per_unit : cores_per_unit(options.compute_units);
    fast_ = options.engine == EmuEngine::kFast;
    name_ = "sw_emu[" + std::to_string(index) + "] " + std::to_string(shape_.rows) + "x" +
            std::to_string(shape_.cols) + (options.engine == EmuEngine::kHls ? " hls" : " fast");
    for (uint32_t i = 0; i < options.compute_units; ++i) {
      auto unit = std::make_unique<Unit>();
      unit->engine =
          fast_ ? std::make_unique<FastEngine>(shape_, threads_, memory_) : make_hls_engine(shape_, memory_);
      unit->worker = std::thread([this, u = unit.get()] { serve(*u); });
      units_.push_back(std::move(unit));
    }
  }

  ~SwEmuBackend() override {
    for (auto& unit : units_) {
      {
        std::lock_guard<std::mutex> lock(unit->mutex);
        unit->stop = true;
      }
      unit->work.notify_all();
      unit->worker.join();
    }
  }

  std::string name() const override { return name_; }
  uint32_t compute_units() const override { return uint32_t(units_.size()); }
  uint32_t host_threads() const override { return threads_; }
  // The fast engine reaches host memory; the HLS kernel, only its ports'
  // device memory.
  Result<uint64_t> import_host(void* host, std::size_t bytes) override {
    if (!fast_) return DeviceBackend::import_host(host, bytes);
    return memory_.import(host, bytes);
  }
  uint64_t address_limit() const override {
    return fast_ ? 2 * EmulatedMemory::kHostWindow : EmulatedBackend::address_limit();
  }

  uint32_t read_register(uint32_t index, uint32_t offset) override {
    Unit& unit = *units_.at(index);
    switch (offset) {
      case reg::kControl: {
        std::lock_guard<std::mutex> lock(unit.mutex);
        uint32_t value = unit.busy ? 0 : spec::ctrl::kApIdle;
        if (unit.done) value |= spec::ctrl::kApDone | spec::ctrl::kApReady;
        unit.done = false;  // ap_done is clear-on-read
        return value;
      }
      case reg::kId:
        return spec::kDeviceId;
      case reg::kVersion:
        return spec::kVersion;
      case reg::kArrayRows:
        return shape_.rows;
      case reg::kArrayCols:
        return shape_.cols;
      case reg::kMaxM:
        return shape_.max_m();
      case reg::kMaxN:
        return shape_.max_n();
      case reg::kMaxK:
        return shape_.max_k();
      case reg::kBeatBytes:
        return spec::kBeatBytes;
      case reg::kMaxDescriptors:
        return shape_.max_descriptors();
      case reg::kFeatures:
        return shape_.features;
      default:
        return offset < reg::kMapEnd && offset % 4 == 0
                   ? unit.registers[offset / 4].load(std::memory_order_relaxed)
                   : 0;
    }
  }

  void write_register(uint32_t index, uint32_t offset, uint32_t value) override {
    Unit& unit = *units_.at(index);
    if (offset >= reg::kCommandAddrLo && offset < reg::kStatus && offset % 4 == 0) {
      unit.registers[offset / 4].store(value, std::memory_order_relaxed);  // only the arguments are writable
      return;
    }
    if (offset != reg::kControl || !(value & spec::ctrl::kApStart)) return;
    {
      std::lock_guard<std::mutex> lock(unit.mutex);
      if (unit.busy) return;
      unit.busy = true;
      unit.done = false;
      unit.started = Clock::now();
      unit.handed = unit.eager;
      if (!unit.handed) return;  // the waiter will run it (see wait_done)
    }
    unit.work.notify_all();
  }

  // Who runs a launch. Handing a launch to the unit's worker and back costs
  // two wake-ups (about 20 us on a 2-core VM, most of a small product's
  // time), so a launch that nobody has taken is run by the thread that
  // waits for it. A unit whose launches are waited on at once ("lazy")
  // does not wake its worker at ap_start at all; the worker is woken when
  // anything else happens first: a poll (a wait of 0 ms, which only looks),
  // or a wait on another unit (a caller that starts several units and then
  // waits for each gets them run side by side). A unit whose caller does
  // other work before it waits ("eager", as every unit starts) has its
  // worker woken at ap_start, so the launch overlaps that work. A unit
  // switches by what its last wait saw. An engine cannot hang, so a launch
  // run by a waiter ends however long the timeout.
  bool wait_done(uint32_t index, std::chrono::milliseconds timeout) override {
    Unit& unit = *units_.at(index);
    if (timeout.count() == 0) {
      std::lock_guard<std::mutex> lock(unit.mutex);
      hand_to_worker(unit);
      return unit.done;
    }
    for (auto& other : units_)
      if (other.get() != &unit) {
        std::lock_guard<std::mutex> lock(other->mutex);
        hand_to_worker(*other);
      }
    std::unique_lock<std::mutex> lock(unit.mutex);
    if (unit.busy && !unit.done) {
      const bool prompt = Clock::now() - unit.started < kPromptWait;
      // A prompt waiter makes the unit lazy; a late one, eager.
      unit.eager = !prompt;
      if (!unit.running) run_latched(unit, lock);
    }
    return unit.finished.wait_for(lock, timeout, [&] { return unit.done; });
  }

 private:
  using Clock = std::chrono::steady_clock;
  // A wait this soon after ap_start came from a caller that waits at once.
  static constexpr auto kPromptWait = std::chrono::microseconds(25);

  struct Unit {
    std::mutex mutex;
    std::condition_variable work;      // the worker: a launch to run, or stop
    std::condition_variable finished;  // waiters: done
    SharedRegisterFile registers{};
    bool busy = false;     // started, not yet done
    bool running = false;  // a thread (the worker or a waiter) runs the launch
    bool done = false;
    bool stop = false;
    bool eager = true;    // wake the worker at ap_start
    bool handed = false;  // the worker has been woken for this launch
    Clock::time_point started;
    std::unique_ptr<KernelEngine> engine;
    std::thread worker;
  };

  // Wakes the unit's worker for a launch nobody has taken or woken it for
  // (with the unit's mutex held).
  static void hand_to_worker(Unit& unit) {
    if (!unit.busy || unit.done || unit.running || unit.handed) return;
    unit.handed = true;
    unit.work.notify_all();
  }

  static uint64_t argument64(const RegisterFile& registers, uint32_t offset_lo) {
    return registers[offset_lo / 4] | uint64_t(registers[offset_lo / 4 + 1]) << 32;
  }

  // The launch arguments are checked here, where a board's interconnect
  // would answer DECERR: the ports must be beat-aligned, their windows
  // inside the address space, and the command list inside device memory.
  LaunchResult launch(KernelEngine& engine, const RegisterFile& arguments) {
    uint64_t bases[spec::kMemoryPorts];  // bases[0]: the command list
    for (uint32_t p = 0; p < spec::kMemoryPorts; ++p) bases[p] = argument64(arguments, reg::port_base(p));
    const uint64_t cmd = bases[0];
    const uint64_t window = argument64(arguments, reg::kMemBytesLo);
    LaunchResult result;
    result.error_index = spec::kHeaderErrorIndex;
    for (uint64_t base : bases)
      if (base % spec::kBeatBytes != 0) {
        result.status = spec::ErrorCode::kMisalignedAddress;
        return result;
      }
    bool fits = spec::in_range(cmd, spec::kBeatBytes, memory_.bytes());
    for (uint32_t p = 1; p < spec::kMemoryPorts; ++p)
      fits = fits && spec::in_range(bases[p], window, address_limit());
    if (fits) {
      const auto header = spec::decode<spec::CommandListHeader>(memory_.base() + cmd);
      fits = header.count > shape_.max_descriptors() ||
             spec::in_range(cmd, spec::command_list_bytes(header.count), memory_.bytes());
    }
    if (!fits) {
      result.status = spec::ErrorCode::kAddressOutOfRange;
      return result;
    }
    return engine.run(bases, window);
  }

  void serve(Unit& unit) {
    std::unique_lock<std::mutex> lock(unit.mutex);
    for (;;) {
      unit.work.wait(lock,
                     [&] { return unit.stop || (unit.handed && unit.busy && !unit.done && !unit.running); });
      if (unit.stop) return;
      run_latched(unit, lock);
    }
  }

  // Runs the launch latched at ap_start (with `lock` held on entry and on
  // return; released while the engine works) and publishes its result.
  void run_latched(Unit& unit, std::unique_lock<std::mutex>& lock) {
    unit.running = true;
    RegisterFile arguments;  // as latched at ap_start
    for (std::size_t i = 0; i < arguments.size(); ++i)
      arguments[i] = unit.registers[i].load(std::memory_order_relaxed);
    lock.unlock();
    const LaunchResult result = launch(*unit.engine, arguments);
    lock.lock();
    auto set = [&](uint32_t offset, uint32_t value) {
      unit.registers[offset / 4].store(value, std::memory_order_relaxed);
    };
    auto set64 = [&](uint32_t offset_lo, uint64_t value) {
      set(offset_lo, uint32_t(value));
      set(offset_lo + 4, uint32_t(value >> 32));
    };
    set(reg::kStatus, static_cast<uint32_t>(result.status));
    set(reg::kErrorIndex, result.error_index);
    set(reg::kDescriptorsDone, result.counters.descriptors_done);
    set64(reg::kBusyCyclesLo, result.counters.busy_cycles);
    set64(reg::kMacsLo, result.counters.macs);
    set64(reg::kDmaReadBytesLo, result.counters.dma_read_bytes);
    set64(reg::kDmaWriteBytesLo, result.counters.dma_write_bytes);
    set64(reg::kStallCyclesLo, result.counters.stall_cycles);
    unit.running = false;
    unit.busy = false;
    unit.done = true;
    unit.finished.notify_all();
  }

  uint32_t threads_ = 1;  // the fast engine's, per unit
  bool fast_ = true;      // the fast engine (else the HLS kernel)
  spec::ArrayShape shape_;
  std::string name_;
  std::vector<std::unique_ptr<Unit>> units_;
};

}  // namespace

Result<std::shared_ptr<DeviceBackend>> open_sw_emu(uint32_t index, const DeviceOptions& options) {
  constexpr uint32_t kEmulatedDevices = 16;
  if (index >= kEmulatedDevices)
    return Status(StatusCode::kNotFound, "sw_emu device " + std::to_string(index) +
                                             " does not exist (sw_emu emulates " +
                                             std::to_string(kEmulatedDevices) + " devices, 0-" +
                                             std::to_string(kEmulatedDevices - 1) + ")");
  const spec::ArrayShape shape{options.array_rows, options.array_cols};
#define SYSTOLE_SIZE_NAME(size) " " #size "x" #size
#define SYSTOLE_BOARD_NAME(r, c) " " #r "x" #c
  const bool board = is_board_shape(shape) && options.engine == EmuEngine::kHls;
  if (!is_supported(shape) && !board)
    return Status(StatusCode::kInvalidArgument,
                  "sw_emu has no " + std::to_string(shape.rows) + "x" + std::to_string(shape.cols) +
                      " array (supported:" SYSTOLE_ARRAY_SIZES(SYSTOLE_SIZE_NAME) "; with the hls engine, the "
                      "small boards'" SYSTOLE_BOARD_SHAPES(SYSTOLE_BOARD_NAME) " too)");
#undef SYSTOLE_BOARD_NAME
#undef SYSTOLE_SIZE_NAME
  if (Status units = check_emulated_units(options.compute_units); !units.ok()) return units;
  // More threads than this only time-slice the cores (and each costs a
  // stack); a bound turns a typo into an error rather than 100,000 threads.
  constexpr uint32_t kMaxThreadsPerUnit = 256;
  if (options.threads_per_unit > kMaxThreadsPerUnit)
    return Status(StatusCode::kInvalidArgument, "threads_per_unit must be 0 (cores / units) to " +
                                                    std::to_string(kMaxThreadsPerUnit) + ", got " +
                                                    std::to_string(options.threads_per_unit));
  if (options.hbm_banks == 0 || options.bank_bytes == 0 ||
      options.bank_bytes % BankAllocator::kAlignment != 0)
    return Status(StatusCode::kInvalidArgument,
                  "hbm_banks must be > 0 and bank_bytes a nonzero multiple of 4096");
  auto backend = std::make_shared<SwEmuBackend>(index, options);
  if (!backend->usable())
    return Status(StatusCode::kUnavailable, "sw_emu: cannot map " + std::to_string(options.hbm_banks) +
                                                " x " + std::to_string(options.bank_bytes) +
                                                " bytes of device memory");
  return std::shared_ptr<DeviceBackend>(std::move(backend));
}

}  // namespace systole::detail
