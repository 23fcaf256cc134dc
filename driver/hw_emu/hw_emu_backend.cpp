// SPDX-License-Identifier: Apache-2.0
// The hw_emu backend: the SystemVerilog kernel (hw/rtl), verilated for each
// supported array size, inside sim/'s harness with the HBM models, behind
// the same DeviceBackend interface as sw_emu. Registers are AXI4-Lite
// transactions on the RTL; a wait runs the clock until the kernel raises
// its interrupt. One compute unit per device.
#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "../src/backend.h"
#include "../src/device_memory.h"
#include "Vsystole_kernel_128x128.h"
#include "Vsystole_kernel_16x16.h"
#include "Vsystole_kernel_4x4.h"
#include "Vsystole_kernel_8x8.h"
#include "kernel_harness.h"

namespace systole::detail {
namespace {

constexpr uint64_t kCyclesPerSlice = 20000;

template <class Model>
class HwEmuBackend final : public EmulatedBackend {
 public:
  HwEmuBackend(uint32_t index, const DeviceOptions& options, spec::ArrayShape shape)
      : EmulatedBackend(options.hbm_banks, options.bank_bytes),
        name_("hw_emu[" + std::to_string(index) + "] " + std::to_string(shape.rows) + "x" +
              std::to_string(shape.cols) + " rtl"),
        harness_(memory_.base(), memory_.bytes(),
                 sim::MemoryTiming{options.hw_emu.latency_cycles, options.hw_emu.arready_probability,
                                   options.hw_emu.rvalid_probability, options.hw_emu.seed},
                 options.hw_emu.trace_fst) {
    if (options.hw_emu.stall_end > options.hw_emu.stall_begin)
      for (uint32_t port = 0; port < spec::kMemoryPorts; ++port)
        harness_.read_port(port).inject_stall(options.hw_emu.stall_begin, options.hw_emu.stall_end);
    // The backend waits on the interrupt, so it owns the interrupt enables.
    harness_.write(spec::reg::kGlobalIntEnable, 1);
    harness_.write(spec::reg::kIpIntEnable, 1);
  }

  std::string name() const override { return name_; }
  uint32_t compute_units() const override { return 1; }
  const std::string& trace_error() const { return harness_.trace_error(); }

  uint32_t read_register(uint32_t, uint32_t offset) override {
    std::lock_guard<std::mutex> lock(mutex_);
    return harness_.read(offset);
  }
  void write_register(uint32_t, uint32_t offset, uint32_t value) override {
    std::lock_guard<std::mutex> lock(mutex_);
    harness_.write(offset, value);
  }

  bool wait_done(uint32_t, std::chrono::milliseconds timeout) override {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    do {
      if (harness_.run_until_interrupt(kCyclesPerSlice)) return true;
    } while (std::chrono::steady_clock::now() < deadline);
    return false;
  }

 private:
  std::string name_;
  std::mutex mutex_;  // the simulation is single-threaded
  sim::KernelHarness<Model> harness_;
};

template <class Model>
Result<std::shared_ptr<DeviceBackend>> make(uint32_t index, const DeviceOptions& options,
                                            spec::ArrayShape shape) {
  auto backend = std::make_shared<HwEmuBackend<Model>>(index, options, shape);
  if (!backend->usable()) return Status(StatusCode::kUnavailable, "hw_emu: cannot map device memory");
  if (!backend->trace_error().empty())
    return Status(StatusCode::kUnavailable, "hw_emu: trace_fst: " + backend->trace_error());
  return std::shared_ptr<DeviceBackend>(std::move(backend));
}

}  // namespace

Result<std::shared_ptr<DeviceBackend>> open_hw_emu(uint32_t index, const DeviceOptions& options) {
  if (index != 0)
    return Status(StatusCode::kNotFound,
                  "hw_emu device " + std::to_string(index) + " does not exist (hw_emu has one device, 0)");
  if (options.compute_units != 1)
    return Status(
        StatusCode::kInvalidArgument,
        "hw_emu simulates one compute unit, " + std::to_string(options.compute_units) + " were asked for");
  for (const double p : {options.hw_emu.arready_probability, options.hw_emu.rvalid_probability})
    if (!(p > 0.0 && p <= 1.0))
      return Status(StatusCode::kInvalidArgument,
                    "hw_emu: the back-pressure probabilities must lie in (0, 1], got " + std::to_string(p));
  if (options.hbm_banks == 0 || options.bank_bytes == 0 || options.bank_bytes % BankAllocator::kAlignment)
    return Status(StatusCode::kInvalidArgument,
                  "hbm_banks must be > 0 and bank_bytes a nonzero multiple of 4096");
  const spec::ArrayShape shape{options.array_rows, options.array_cols};
  if (shape.rows == 4 && shape.cols == 4) return make<Vsystole_kernel_4x4>(index, options, shape);
  if (shape.rows == 8 && shape.cols == 8) return make<Vsystole_kernel_8x8>(index, options, shape);
  if (shape.rows == 16 && shape.cols == 16) return make<Vsystole_kernel_16x16>(index, options, shape);
  if (shape.rows == 128 && shape.cols == 128) return make<Vsystole_kernel_128x128>(index, options, shape);
  return Status(StatusCode::kInvalidArgument, "hw_emu has no " + std::to_string(shape.rows) + "x" +
                                                  std::to_string(shape.cols) +
                                                  " build (built: 4x4, 8x8, 16x16, 128x128)");
}

}  // namespace systole::detail
