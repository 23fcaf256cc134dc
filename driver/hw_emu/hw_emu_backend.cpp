// SPDX-License-Identifier: Apache-2.0
// The hw_emu backend: the SystemVerilog kernel (hw/rtl), verilated at each
// size of SYSTOLE_HW_EMU_SIZES, inside sim/'s harness with the HBM models,
// behind the same DeviceBackend interface as sw_emu. Registers are
// AXI4-Lite transactions on the RTL; a wait runs the unit's clock until the
// kernel raises its interrupt. Each compute unit is a model of its own
// (its own Verilator context, clock and memory ports) over the one device
// memory, so replicas run on the RTL side by side, one thread each.
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "../src/backend.h"
#include "../src/device_memory.h"
#include "hw_emu_models.h"  // generated: the Vsystole_kernel_<n>x<n> headers
#include "kernel_harness.h"

namespace systole::detail {
namespace {

constexpr uint64_t kCyclesPerSlice = 20000;

// Unit 0 traces to `path`; unit u > 0 to the path with ".cu<u>" before
// its extension (run.fst -> run.cu1.fst).
std::string unit_trace_path(const std::string& path, uint32_t unit) {
  if (path.empty() || unit == 0) return path;
  const auto slash = path.find_last_of('/');
  const auto dot = path.find_last_of('.');
  const auto stem_end =
      dot != std::string::npos && (slash == std::string::npos || dot > slash) ? dot : path.size();
  return path.substr(0, stem_end) + ".cu" + std::to_string(unit) + path.substr(stem_end);
}

template <class Model>
class HwEmuBackend final : public EmulatedBackend {
 public:
  HwEmuBackend(uint32_t index, const DeviceOptions& options, spec::ArrayShape shape)
      : EmulatedBackend(options.hbm_banks, options.bank_bytes),
        name_("hw_emu[" + std::to_string(index) + "] " + std::to_string(shape.rows) + "x" +
              std::to_string(shape.cols) + " rtl") {
    const HwEmuOptions& hw = options.hw_emu;
    for (uint32_t u = 0; u < options.compute_units; ++u) {
      // Each unit's back-pressure draws from streams of its own (the
      // harness seeds its 15 memory models seed + 1 .. seed + 15).
      const sim::MemoryTiming timing{hw.latency_cycles, hw.arready_probability, hw.rvalid_probability,
                                     hw.seed + u * (spec::kMemoryPorts + spec::kCPorts)};
      auto unit =
          std::make_unique<Unit>(memory_.base(), memory_.bytes(), timing, unit_trace_path(hw.trace_fst, u));
      if (hw.stall_end > hw.stall_begin)
        for (uint32_t port = 0; port < spec::kMemoryPorts; ++port)
          unit->harness.read_port(port).inject_stall(hw.stall_begin, hw.stall_end);
      // The backend waits on the interrupt, so it owns the interrupt enables.
      unit->harness.write(spec::reg::kGlobalIntEnable, 1);
      unit->harness.write(spec::reg::kIpIntEnable, 1);
      units_.push_back(std::move(unit));
    }
  }

  std::string name() const override { return name_; }
  uint32_t compute_units() const override { return uint32_t(units_.size()); }
  std::string trace_error() const {
    for (const auto& unit : units_)
      if (!unit->harness.trace_error().empty()) return unit->harness.trace_error();
    return "";
  }

  uint32_t read_register(uint32_t index, uint32_t offset) override {
    Unit& unit = *units_.at(index);
    std::lock_guard<std::mutex> lock(unit.mutex);
    return unit.harness.read(offset);
  }
  void write_register(uint32_t index, uint32_t offset, uint32_t value) override {
    Unit& unit = *units_.at(index);
    std::lock_guard<std::mutex> lock(unit.mutex);
    unit.harness.write(offset, value);
  }

  bool wait_done(uint32_t index, std::chrono::milliseconds timeout) override {
    Unit& unit = *units_.at(index);
    std::lock_guard<std::mutex> lock(unit.mutex);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    do {
      if (unit.harness.run_until_interrupt(kCyclesPerSlice)) return true;
    } while (std::chrono::steady_clock::now() < deadline);
    return false;
  }

 private:
  struct Unit {
    Unit(uint8_t* memory, uint64_t bytes, sim::MemoryTiming timing, const std::string& fst)
        : harness(memory, bytes, timing, fst) {}
    std::mutex mutex;  // a model is simulated by one thread at a time
    sim::KernelHarness<Model> harness;
  };

  std::string name_;
  std::vector<std::unique_ptr<Unit>> units_;
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
  if (Status units = check_emulated_units(options.compute_units); !units.ok()) return units;
  for (const double p : {options.hw_emu.arready_probability, options.hw_emu.rvalid_probability})
    if (!(p > 0.0 && p <= 1.0))
      return Status(StatusCode::kInvalidArgument,
                    "hw_emu: the back-pressure probabilities must lie in (0, 1], got " + std::to_string(p));
  if (options.hbm_banks == 0 || options.bank_bytes == 0 || options.bank_bytes % BankAllocator::kAlignment)
    return Status(StatusCode::kInvalidArgument,
                  "hbm_banks must be > 0 and bank_bytes a nonzero multiple of 4096");
  const spec::ArrayShape shape{options.array_rows, options.array_cols};
#define SYSTOLE_HW_EMU_OPEN(size)               \
  if (shape.rows == size && shape.cols == size) \
    return make<Vsystole_kernel_##size##x##size>(index, options, shape);
  SYSTOLE_HW_EMU_BUILT_SIZES(SYSTOLE_HW_EMU_OPEN)
#undef SYSTOLE_HW_EMU_OPEN
#define SYSTOLE_HW_EMU_NAME(size) " " #size "x" #size
  bool listed = false;
#define SYSTOLE_HW_EMU_LISTED(size) listed = listed || (shape.rows == size && shape.cols == size);
  SYSTOLE_HW_EMU_SIZES(SYSTOLE_HW_EMU_LISTED)
#undef SYSTOLE_HW_EMU_LISTED
  return Status(StatusCode::kInvalidArgument,
                "hw_emu has no " + std::to_string(shape.rows) + "x" + std::to_string(shape.cols) +
                    " build (built:" SYSTOLE_HW_EMU_BUILT_SIZES(SYSTOLE_HW_EMU_NAME) ")" +
                    (listed ? std::string("; configure with -DSYSTOLE_HW_EMU_ALL_SIZES=ON (scripts/build "
                                          "--all-sizes) for the 32x32 and 128x128 kernels")
                            : std::string()));
#undef SYSTOLE_HW_EMU_NAME
}

}  // namespace systole::detail
