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
#include <string>
#include <vector>

#include "systole/spec.h"
#include "systole/status.h"

namespace systole {

class Device;
namespace detail {
class DeviceBackend;
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
  std::string xclbin;                   // xrt: the bitstream to load
  HwEmuOptions hw_emu;                  // hw_emu: the memory model
};

// "128x128" -> {128, 128}; an error names the text otherwise.
Result<spec::ArrayShape> parse_array_shape(const std::string& text);

// What the device reports about itself (read from its ID registers).
struct DeviceInfo {
  std::string backend;  // "sw_emu", "hw_emu", "xrt"
  uint32_t index = 0;
  std::string name;  // human-readable, e.g. "sw_emu[0] 128x128 fast"
  uint32_t version = 0;
  spec::ArrayShape shape{0, 0};
  uint32_t max_m = 0, max_n = 0, max_k = 0;
  uint32_t max_descriptors = 0;
  uint32_t beat_bytes = 0;
  uint32_t compute_units = 0;
  uint32_t hbm_banks = 0;
  uint64_t bank_bytes = 0;
};

// A buffer object in one HBM bank, with a host-side copy (as xrt::bo).
// write/read move data between the caller and the host copy; sync moves it
// between the host copy and device memory. The device memory is released
// when the last handle goes: keep every buffer that a command list's
// descriptors point into alive until its run has been waited on (a Run keeps
// only the command list itself).
class Buffer {
 public:
  enum class SyncDirection { kToDevice, kFromDevice };

  Buffer() = default;
  explicit operator bool() const { return state_ != nullptr; }

  std::size_t size() const;
  uint32_t bank() const;
  // Device address, as placed in descriptors.
  uint64_t address() const;

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

class Device {
 public:
  // Opens device `index` of a backend: "sw_emu", "hw_emu" or "xrt".
  static Result<Device> open(const std::string& backend, uint32_t index, const DeviceOptions& options = {});
  // The backends compiled into this build.
  static std::vector<std::string> backends();

  Device() = default;
  explicit operator bool() const { return backend_ != nullptr; }

  const DeviceInfo& info() const { return *info_; }

  Result<Buffer> allocate(std::size_t bytes, uint32_t bank);

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
