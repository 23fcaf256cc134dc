// SPDX-License-Identifier: Apache-2.0
// The Systole device API, modelled on XRT's native API: a Device holds one or
// more compute units (array instances) and HBM banks; Buffers live in a bank
// and are synced to and from the device; a Run is one launch of a command
// list on one compute unit, waited on with a timeout. Handles are cheap to
// copy and share their object. No backend type appears here.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "systole/spec.h"
#include "systole/status.h"

namespace systole {

class Device;
namespace detail {
class DeviceBackend;
class CardModelBackend;
struct BufferState;
struct RunState;
Result<Device> attach_device(std::shared_ptr<DeviceBackend> backend, const std::string& backend_name,
                             uint32_t index);
}  // namespace detail

// How the sw_emu backend executes a command list.
enum class EmuEngine {
  kFast,  // SIMD, multi-threaded, same bits as the HLS kernel
  kHls,   // the hw/hls kernel compiled natively (the executable spec)
};

// hw_emu's HBM model and fault injection.
// The uart backend: a small board (an iCEBreaker) on a serial port, which
// carries register and memory transfers in frames (docs/kernel-interface.md,
// "UART host link").
struct UartOptions {
  std::string port;                   // e.g. /dev/ttyUSB1
  uint32_t baud = 115200;             // as the bitstream was built
  uint64_t memory_bytes = 128 << 10;  // the board's device memory (the UP5K's SPRAM)
};

struct HwEmuOptions {
  uint32_t latency_cycles = 24;      // AR handshake to the first R beat
  double arready_probability = 1.0;  // < 1: random back-pressure on AR
  double rvalid_probability = 1.0;   // < 1: random gaps between R beats
  uint32_t seed = 1;                 // of the back-pressure
  // Reads of bursts that start in [stall_begin, stall_end) never return:
  // the kernel hangs, and Run::wait reports its timeout.
  uint64_t stall_begin = 0, stall_end = 0;
  // Non-empty: write an FST waveform of the whole run there (GTKWave
  // reads it). Every signal, every half cycle: keep such runs short.
  std::string trace_fst;
};

// The perf backend: the board it models (sim/systemc/card.h lists them;
// "hw_emu" is the co-simulation's memory) and overrides of its clock and
// host link (0: the board's own).
struct PerfOptions {
  std::string board = "u55c";
  double clock_mhz = 0;
  uint32_t pcie_gen = 0, pcie_lanes = 0;
};

// Options for opening a device. The array shape and the number of compute
// units apply to emulated devices only; a board reports its own.
struct DeviceOptions {
  uint32_t array_rows = spec::kDefaultShape.rows;
  uint32_t array_cols = spec::kDefaultShape.cols;
  uint32_t compute_units = 1;
  uint32_t hbm_banks = 32;              // as an Alveo U55C
  uint64_t bank_bytes = 512ull << 20;   // per bank: 16 GiB in all, as a U55C
  EmuEngine engine = EmuEngine::kFast;  // sw_emu only
  uint32_t threads_per_unit = 0;        // fast engine; 0 = cores / units
  // sw_emu: what its kernel has besides the array (spec::feature::k*).
  uint32_t sw_emu_features = spec::feature::kAll;
  std::string xclbin;   // xrt: the bitstream to load
  HwEmuOptions hw_emu;  // hw_emu: the memory model
  UartOptions uart;     // uart: the board's serial link
  PerfOptions perf;     // perf: the board modelled
};

// What a modelled device (the perf backend) projects for the work done on it
// so far, on the board it models. Host threads each keep their own
// simulated time: a thread's transfers and launches follow each other, and
// different threads' work overlaps and contends for the card's host link
// and memory. Time the host itself spends computing is not included.
struct Projection {
  std::string board;  // e.g. "u55c: 8 x 32x32 at 300 MHz, PCIe Gen3 x16"
  double clock_hz = 0;
  double seconds = 0;         // the latest end of any transfer or launch
  double launch_seconds = 0;  // summed over launches
  double link_seconds = 0;    // summed over host-link transfers
  uint64_t link_bytes = 0;    // both ways over the host link
  uint64_t launches = 0;
  uint64_t busy_cycles = 0;   // summed over launches
  uint64_t array_cycles = 0;  // cycles an activation row entered an array
  uint64_t macs = 0;
  uint64_t hbm_wait_cycles = 0;  // bursts' waits beyond the idle latency
  // Launches by what bounds them: the array (it streams most cycles), or
  // memory (it waits for operands more than it computes).
  uint64_t compute_bound = 0, memory_bound = 0;
  uint32_t array_rows = 0, array_cols = 0, compute_units = 0;

  // Useful MACs over the arrays' peak during the launches.
  double utilization() const {
    return busy_cycles ? double(macs) / (double(busy_cycles) * array_rows * array_cols) : 0.0;
  }
  // What bounds the work: "host link" when transfers take longer than the
  // launches, else "compute" or "HBM" by the launches' majority.
  const char* bound() const {
    if (link_seconds >= launch_seconds) return "host link";
    return compute_bound >= memory_bound ? "compute" : "HBM";
  }
  // The work done between `before` (an earlier projection of the same
  // device) and this one.
  Projection since(const Projection& before) const;
  // Adds a later stretch of work (as since() returns one).
  Projection& operator+=(const Projection& more);
};

// "128x128" -> {128, 128}; an error names the text otherwise.
Result<spec::ArrayShape> parse_array_shape(const std::string& text);

// A --device argument: a number is the backend's device index ("0"); anything
// else is the uart backend's serial port ("/dev/ttyUSB1", index 0).
Status parse_device(const std::string& text, uint32_t* index, DeviceOptions* options);

// What the device reports about itself (read from its ID registers).
struct DeviceInfo {
  std::string backend;  // "sw_emu", "hw_emu", "xrt", "perf"
  uint32_t index = 0;
  std::string name;  // human-readable, e.g. "sw_emu[0] 128x128 fast"
  uint32_t version = 0;
  spec::ArrayShape shape{0, 0};
  uint32_t max_m = 0, max_n = 0, max_k = 0;
  uint32_t max_descriptors = 0;
  uint32_t beat_bytes = 0;
  uint32_t features = 0;  // spec::feature::k* (the Features register)
  uint32_t compute_units = 0;
  // Host threads the caller of one unit may use for its own work for the
  // unit (rounding operands to bf16): threads_per_unit, or cores / units.
  uint32_t host_threads = 1;
  uint32_t hbm_banks = 0;
  uint64_t bank_bytes = 0;

  bool has_vector_engine() const { return (features & spec::feature::kVectorEngine) != 0; }
};

// A buffer object in one HBM bank with a host view (as xrt::bo and its
// map()). write/read move data between the caller and the host view (or the
// caller works in map() directly); sync moves it between the host view and
// device memory. Where host and device share memory (sw_emu, hw_emu) the
// buffer is mapped: its host view is device memory itself, so the syncs
// move nothing and a write is seen by the device at once (do not write a
// buffer that a running launch uses). Elsewhere (boards over PCIe or UART,
// and the perf backend, which counts the host link's bytes) the view is a
// host copy (zero until written, taking host memory only where the host
// writes or syncs) and the syncs transfer. Code that syncs as it would for a
// board is right on both. The device memory is released when the last
// handle goes: keep every buffer that a command list's descriptors point
// into alive until its run has been waited on (a Run keeps only the
// command list itself).
class Buffer {
 public:
  enum class SyncDirection { kToDevice, kFromDevice };

  // The bank of a buffer over host memory (Device::import_host).
  static constexpr uint32_t kHostMemory = ~0u;

  Buffer() = default;
  explicit operator bool() const { return state_ != nullptr; }

  std::size_t size() const;
  uint32_t bank() const;
  // Device address, as placed in descriptors.
  uint64_t address() const;

  // The host view, size() bytes, valid while a handle to the buffer lives.
  void* map() const;
  template <class T>
  T* map() const {
    return static_cast<T*>(map());
  }
  // True when the host view is device memory (the syncs are no-ops).
  bool mapped() const;

  Status write(const void* src, std::size_t bytes, std::size_t offset = 0);
  Status read(void* dst, std::size_t bytes, std::size_t offset = 0) const;
  Status sync(SyncDirection direction);
  Status sync(SyncDirection direction, std::size_t bytes, std::size_t offset);

 private:
  friend class Device;
  explicit Buffer(std::shared_ptr<detail::BufferState> state) : state_(std::move(state)) {}
  std::shared_ptr<detail::BufferState> state_;
};

// One launch of a command list on one compute unit.
class Run {
 public:
  Run() = default;
  explicit operator bool() const { return state_ != nullptr; }

  // Waits until the kernel is done. Ok when it finished without error;
  // kDeviceError naming the error code and descriptor index when the kernel
  // reported one; kTimeout when it has not finished in time (the run goes on
  // and may be waited on again).
  // wait(0ms) polls.
  Status wait(std::chrono::milliseconds timeout);

  // Valid after a wait that did not time out.
  spec::ErrorCode error_code() const;
  uint32_t error_index() const;
  spec::PerfCounters counters() const;

 private:
  friend class Device;
  explicit Run(std::shared_ptr<detail::RunState> state) : state_(std::move(state)) {}
  std::shared_ptr<detail::RunState> state_;
};

// What a backend can do, so that tools need not know backends by name.
struct BackendCapabilities {
  std::string name;  // what Device::open takes
  // Makes as many compute units as DeviceOptions::compute_units asks for
  // (the emulators and the card model); otherwise the device has the
  // units it has.
  bool units_on_demand = false;
  // Runs the kernels on this machine's cores (a compute unit per thread
  // group), so a sensible number of units depends on the cores.
  bool uses_host_cores = false;
  // Models a board's timing (DeviceOptions::perf names the board): the
  // device has a card_model().
  bool models_board = false;
  // Drives real hardware: its timings are the hardware's.
  bool hardware = false;
};

// A modelled board's clock, reached through the device whose backend
// models it (Device::card_model): what the work so far would take there.
// A handle, like the device.
class CardModel {
 public:
  // The projection of the work so far.
  Projection projection() const;
  // The calling host thread meets `threads` host threads, itself among
  // them, as at a barrier (replicas at an all-reduce), so that what each
  // of them asks of the card next starts after what all of them asked
  // before. Each of the threads calls it at each such meeting.
  void meet_host_threads(uint32_t threads) const;

 private:
  friend class Device;
  CardModel(std::shared_ptr<detail::DeviceBackend> backend, detail::CardModelBackend* model)
      : backend_(std::move(backend)), model_(model) {}
  std::shared_ptr<detail::DeviceBackend> backend_;  // keeps the model alive
  detail::CardModelBackend* model_ = nullptr;
};

class Device {
 public:
  // Opens device `index` of a backend: "sw_emu", "hw_emu", "xrt", "perf"
  // or "uart" (options.uart.port names the board).
  static Result<Device> open(const std::string& backend, uint32_t index, const DeviceOptions& options = {});
  // The backends compiled into this build, with what each can do.
  static std::vector<BackendCapabilities> backends();

  Device() = default;
  explicit operator bool() const { return backend_ != nullptr; }

  const DeviceInfo& info() const { return *info_; }

  // The model of a board's timing behind the device (the perf backend's),
  // or none: the backends that run the work have none.
  std::optional<CardModel> card_model() const;

  Result<Buffer> allocate(std::size_t bytes, uint32_t bank);
  // A buffer over `bytes` of the caller's own memory at `host`, as an XRT
  // buffer made from a user pointer, in bank Buffer::kHostMemory: its host
  // view is that memory, and the descriptors that point into it read and
  // write it there, on a backend whose kernel reaches host memory itself
  // (sw_emu's fast engine). The buffer is mapped: its syncs move nothing.
  // kUnavailable on the other backends, whose kernels reach only device
  // memory (the caller stages through a buffer of its own there). The
  // memory must stay valid while the buffer lives.
  Result<Buffer> import_host(void* host, std::size_t bytes);

  // Starts `command_list` (a buffer holding a header and descriptors, synced
  // to the device) on a compute unit. Fails if that unit is still busy. The
  // Run holds a handle to `command_list`.
  Result<Run> start(uint32_t compute_unit, const Buffer& command_list);

 private:
  friend Result<Device> detail::attach_device(std::shared_ptr<detail::DeviceBackend>, const std::string&,
                                              uint32_t);
  std::shared_ptr<detail::DeviceBackend> backend_;
  std::shared_ptr<const DeviceInfo> info_;
};

}  // namespace systole
