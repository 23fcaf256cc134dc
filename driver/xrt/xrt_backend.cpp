// SPDX-License-Identifier: Apache-2.0
// The xrt backend: a Systole kernel on an Alveo board through XRT's native
// API. The device API drives every backend through the kernel's registers
// (device.cpp); here those accesses become XRT calls:
//  - argument registers are staged, and ap_start starts an xrt::run with
//    them (xrt::kernel per compute unit, opened by its CU name);
//  - ap_done/ap_idle come from the run's state, and wait_done is
//    xrt::run::wait with the caller's timeout;
//  - result and identification registers are read with
//    xrt::kernel::read_register at the offsets the xclbin gives each
//    argument (the RTL kernel uses hw/spec's map; an HLS kernel, Vitis's);
//  - HBM bank b is the memory topology entry tagged HBM[b]: buffers are
//    xrt::bo in that memory group, and device addresses are bo addresses.
// None of this has run on a board here (README, "What has not run").
#include <xrt/xrt_bo.h>
#include <xrt/xrt_device.h>
#include <xrt/xrt_kernel.h>

#include <map>
#include <memory>
#include <optional>

#include "../src/backend.h"
#include "systole/descriptor.h"
#include "systole/spec.h"
#include "xclbin_topology.h"

namespace systole::detail {
namespace {

// spec::kKernelArgs index and byte offset of a register of the map, or -1.
std::pair<int, uint32_t> argument_at(uint32_t offset) {
  for (std::size_t i = 0; i < std::size(spec::kKernelArgs); ++i) {
    const spec::KernelArg& arg = spec::kKernelArgs[i];
    if (offset >= arg.offset && offset < arg.offset + arg.bytes) return {int(i), offset - arg.offset};
  }
  return {-1, 0};
}

class XrtBackend final : public DeviceBackend {
 public:
  XrtBackend(uint32_t index, XclbinTopology topology, xrt::device device, xrt::uuid uuid)
      : index_(index), topology_(std::move(topology)), device_(std::move(device)), uuid_(uuid) {}

  Status open_units() {
    for (const XclbinTopology::ComputeUnit& cu : topology_.units) {
      Unit unit;
      try {
        unit.kernel = xrt::kernel(device_, uuid_, topology_.kernel + ":{" + cu.name + "}",
                                  xrt::kernel::cu_access_mode::exclusive);
      } catch (const std::exception& e) {
        return Status(StatusCode::kUnavailable,
                      "xrt: cannot open compute unit " + cu.name + " for exclusive access: " + e.what());
      }
      unit.offsets = cu.offsets;
      unit.staged.assign(std::size(spec::kKernelArgs), 0);
      units_.push_back(std::move(unit));
    }
    // An HLS kernel writes its identification outputs on every launch, so
    // they read 0 before the first: launch an empty list once (the kernel
    // rejects it with bad_count and touches no memory).
    for (uint32_t u = 0; u < units_.size(); ++u) {
      if (read_register(u, spec::reg::kId) == spec::kDeviceId) continue;
      SYSTOLE_RETURN_IF_ERROR(identify_by_launch(u));
    }
    return ok_status();
  }

  std::string name() const override {
    return "xrt[" + std::to_string(index_) + "] " + topology_.platform + " " + topology_.kernel + " x" +
           std::to_string(units_.size());
  }
  uint32_t compute_units() const override { return uint32_t(units_.size()); }
  uint32_t hbm_banks() const override { return topology_.hbm_banks; }
  uint64_t bank_bytes() const override { return topology_.bank_bytes; }

  Result<uint64_t> allocate(std::size_t bytes, uint32_t bank) override {
    if (bank >= topology_.hbm_banks)
      return Status(StatusCode::kInvalidArgument, "xrt: bank " + std::to_string(bank) +
                                                      " does not exist (the xclbin has " +
                                                      std::to_string(topology_.hbm_banks) + " HBM banks)");
    try {
      xrt::bo bo(device_, bytes, xrt::bo::flags::normal,
                 xrt::memory_group(topology_.bank_memory_index[bank]));
      const uint64_t address = bo.address();
      buffers_.emplace(address, std::move(bo));
      return address;
    } catch (const std::exception& e) {
      return Status(StatusCode::kUnavailable, "xrt: cannot allocate " + std::to_string(bytes) +
                                                  " bytes in HBM[" + std::to_string(bank) + "]: " + e.what());
    }
  }

  void release(uint64_t address) override { buffers_.erase(address); }

  Status write_memory(uint64_t address, const void* src, std::size_t bytes) override {
    return transfer(address, bytes, [&](xrt::bo& bo, std::size_t offset) {
      bo.write(src, bytes, offset);
      bo.sync(XCL_BO_SYNC_BO_TO_DEVICE, bytes, offset);
    });
  }

  Status read_memory(uint64_t address, void* dst, std::size_t bytes) override {
    return transfer(address, bytes, [&](xrt::bo& bo, std::size_t offset) {
      bo.sync(XCL_BO_SYNC_BO_FROM_DEVICE, bytes, offset);
      bo.read(dst, bytes, offset);
    });
  }

  uint32_t read_register(uint32_t u, uint32_t offset) override {
    Unit& unit = units_.at(u);
    if (offset == spec::reg::kControl) return control(unit);
    const auto [arg, byte] = argument_at(offset);
    if (arg < 0) return 0;  // interrupt registers: XRT owns them
    try {
      return unit.kernel.read_register(unit.offsets[arg] + byte);
    } catch (const std::exception&) {
      return 0;  // an offset the kernel does not implement reads as 0
    }
  }

  void write_register(uint32_t u, uint32_t offset, uint32_t value) override {
    Unit& unit = units_.at(u);
    if (offset == spec::reg::kControl) {
      if (value & spec::ctrl::kApStart) start(unit);
      return;
    }
    const auto [arg, byte] = argument_at(offset);
    // Interrupt enables are XRT's business; only input arguments are staged.
    if (arg < 0 || spec::kKernelArgs[arg].output) return;
    const int shift = int(byte) * 8;
    unit.staged[arg] = (unit.staged[arg] & ~(uint64_t(0xFFFFFFFF) << shift)) | (uint64_t(value) << shift);
  }

  bool wait_done(uint32_t u, std::chrono::milliseconds timeout) override {
    Unit& unit = units_.at(u);
    if (!unit.run) return true;
    // XRT treats a zero timeout as "forever"; the device API never passes 0.
    const ert_cmd_state state = unit.run->wait(std::max(timeout, std::chrono::milliseconds(1)));
    return state == ERT_CMD_STATE_COMPLETED;
  }

 private:
  struct Unit {
    xrt::kernel kernel;
    std::vector<uint32_t> offsets;  // xclbin register of each argument
    std::vector<uint64_t> staged;   // input argument values
    std::optional<xrt::run> run;
    bool done_reported = false;
  };

  template <class Fn>
  Status transfer(uint64_t address, std::size_t bytes, Fn&& fn) {
    auto it = buffers_.upper_bound(address);
    if (it == buffers_.begin())
      return Status(StatusCode::kInvalidArgument,
                    "xrt: address " + std::to_string(address) + " is in no buffer");
    --it;
    const std::size_t offset = address - it->first;
    if (offset + bytes > it->second.size())
      return Status(StatusCode::kInvalidArgument,
                    "xrt: transfer of " + std::to_string(bytes) + " bytes runs past the end of its buffer");
    try {
      fn(it->second, offset);
    } catch (const std::exception& e) {
      return Status(StatusCode::kDeviceError, std::string("xrt: transfer failed: ") + e.what());
    }
    return ok_status();
  }

  void start(Unit& unit) {
    xrt::run run(unit.kernel);
    for (std::size_t i = 0; i < std::size(spec::kKernelArgs); ++i) {
      const spec::KernelArg& arg = spec::kKernelArgs[i];
      if (arg.output) continue;
      if (arg.bytes == 8) {
        run.set_arg(int(i), unit.staged[i]);
      } else {
        run.set_arg(int(i), uint32_t(unit.staged[i]));
      }
    }
    run.start();
    unit.run = std::move(run);
    unit.done_reported = false;
  }

  // ap_ctrl_hs as the device API expects it: ap_done once per finished run
  // (clear on read), ap_idle whenever no run is active.
  uint32_t control(Unit& unit) {
    if (!unit.run) return spec::ctrl::kApIdle;
    const ert_cmd_state state = unit.run->state();
    if (state == ERT_CMD_STATE_NEW || state == ERT_CMD_STATE_QUEUED || state == ERT_CMD_STATE_RUNNING ||
        state == ERT_CMD_STATE_SUBMITTED)
      return 0;
    uint32_t bits = spec::ctrl::kApIdle;
    if (!unit.done_reported) bits |= spec::ctrl::kApDone;
    unit.done_reported = true;
    return bits;
  }

  Status identify_by_launch(uint32_t u) {
    const uint32_t bank = topology_.units[u].banks[0].front();  // the cmd port's first bank
    const spec::CommandListHeader header = spec::command_list_header(0);
    auto address = allocate(sizeof header, bank);
    if (!address.ok()) return address.status();
    SYSTOLE_RETURN_IF_ERROR(write_memory(*address, &header, sizeof header));
    write_register(u, spec::reg::kCommandAddrLo, uint32_t(*address));
    write_register(u, spec::reg::kCommandAddrHi, uint32_t(*address >> 32));
    write_register(u, spec::reg::kControl, spec::ctrl::kApStart);
    const bool done = wait_done(u, std::chrono::seconds(10));
    control(units_[u]);  // consume ap_done
    release(*address);
    if (!done)
      return Status(StatusCode::kTimeout, "xrt: compute unit " + topology_.units[u].name +
                                              " did not finish an empty launch within 10 s");
    return ok_status();
  }

  uint32_t index_;
  XclbinTopology topology_;
  xrt::device device_;
  xrt::uuid uuid_;
  std::vector<Unit> units_;
  std::map<uint64_t, xrt::bo> buffers_;  // by device address
};

}  // namespace

Result<std::shared_ptr<DeviceBackend>> open_xrt(uint32_t index, const DeviceOptions& options) {
  // The xclbin first: its errors are the user's to fix, and checking it
  // needs no board.
  auto topology = read_xclbin_topology(options.xclbin);
  if (!topology.ok()) return topology.status();
  xrt::device device;
  xrt::uuid uuid;
  try {
    device = xrt::device(index);
  } catch (const std::exception& e) {
    return Status(StatusCode::kNotFound,
                  "xrt: cannot open device " + std::to_string(index) + " (" + e.what() +
                      "); `xbutil examine` lists the boards XRT sees, and the xocl driver must be loaded");
  }
  try {
    uuid = device.load_xclbin(options.xclbin);
  } catch (const std::exception& e) {
    return Status(StatusCode::kUnavailable, "xrt: cannot load " + options.xclbin + " on device " +
                                                std::to_string(index) + ": " + e.what());
  }
  auto backend = std::make_shared<XrtBackend>(index, std::move(topology).value(), std::move(device), uuid);
  SYSTOLE_RETURN_IF_ERROR(backend->open_units());
  return std::shared_ptr<DeviceBackend>(std::move(backend));
}

}  // namespace systole::detail
