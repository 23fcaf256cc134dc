// SPDX-License-Identifier: Apache-2.0
// The interface every driver backend implements: device memory, the compute
// units' AXI4-Lite register files, and a wait for ap_done. The device API in
// device.cpp drives the kernel through registers only, so the register
// sequence is the same for every backend.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "systole/driver.h"
#include "systole/status.h"

namespace systole::detail {

// This host's cores shared among `units` compute units, at least one each:
// the default of a unit's host threads (and of sw_emu's threads per unit).
inline uint32_t cores_per_unit(uint32_t units) {
  return std::max(1u, std::thread::hardware_concurrency() / std::max(1u, units));
}

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;

  virtual std::string name() const = 0;  // e.g. "sw_emu[0] 16x16 hls"
  virtual uint32_t compute_units() const = 0;
  virtual uint32_t hbm_banks() const = 0;
  virtual uint64_t bank_bytes() const = 0;
  // Host threads the caller of one unit may use for its own work on the
  // unit's behalf (rounding operands to bf16): the cores shared among the
  // units, unless the backend was told its threads per unit.
  virtual uint32_t host_threads() const { return cores_per_unit(compute_units()); }

  // Device memory. Addresses are device byte addresses.
  virtual Result<uint64_t> allocate(std::size_t bytes, uint32_t bank) = 0;
  virtual void release(uint64_t address) = 0;
  virtual Status write_memory(uint64_t address, const void* src, std::size_t bytes) = 0;
  virtual Status read_memory(uint64_t address, void* dst, std::size_t bytes) = 0;
  // Where host and device share memory (the emulators), the host address of
  // device range [address, address + bytes): a buffer there is mapped
  // (Buffer::map is device memory and its syncs move nothing). nullptr
  // where data crosses a link that write_memory/read_memory carry (boards,
  // and the card model, which counts the link's bytes).
  virtual uint8_t* shared_memory(uint64_t /*address*/, std::size_t /*bytes*/) { return nullptr; }
  // Host memory the kernel reads and writes itself (as an XRT buffer made
  // from a user pointer, on a board that reaches host memory): the device
  // address of [host, host + bytes), which descriptors may use until
  // release(address). kUnavailable where the kernel reaches only device
  // memory.
  virtual Result<uint64_t> import_host(void* /*host*/, std::size_t /*bytes*/) {
    return Status(StatusCode::kUnavailable, name() + " reaches only its own device memory");
  }
  // The device addresses a launch may use (its mem_bytes argument): the
  // banks, and imported host memory where the backend has it.
  virtual uint64_t address_limit() const { return uint64_t(hbm_banks()) * bank_bytes(); }

  // AXI4-Lite registers of one compute unit (offsets from spec::reg).
  virtual uint32_t read_register(uint32_t unit, uint32_t offset) = 0;
  virtual void write_register(uint32_t unit, uint32_t offset, uint32_t value) = 0;

  // Blocks until the unit raises ap_done or the timeout passes; true if done.
  virtual bool wait_done(uint32_t unit, std::chrono::milliseconds timeout) = 0;

  // Backends whose register port can fail (the uart backend's serial link)
  // keep the first failure here and skip every access after it (reads
  // return 0); the device API checks it after each sequence of accesses.
  // The others never fail.
  virtual Status link_status() const { return ok_status(); }

  // The model of a board's timing, for a backend that models one (perf);
  // null for those that run the work.
  virtual CardModelBackend* card_model() { return nullptr; }
};

// What a backend that models a board's timing adds (Device::card_model).
class CardModelBackend {
 public:
  virtual ~CardModelBackend() = default;
  virtual Projection projection() const = 0;
  virtual void meet_host_threads(uint32_t threads) = 0;
};

// A 64-bit register pair of one unit, low word first.
inline uint64_t read_register64(DeviceBackend& backend, uint32_t unit, uint32_t offset_lo) {
  return backend.read_register(unit, offset_lo) | uint64_t(backend.read_register(unit, offset_lo + 4)) << 32;
}

// A backend on top of another that forwards every call but shared_memory
// and import_host, for backends that change a few (perf times sw_emu's
// launches and its host link; tests count launches): their buffers keep
// host copies, so every transfer goes through write_memory/read_memory.
class ForwardingBackend : public DeviceBackend {
 public:
  explicit ForwardingBackend(std::shared_ptr<DeviceBackend> inner) : inner_(std::move(inner)) {}

  std::string name() const override { return inner_->name(); }
  uint32_t compute_units() const override { return inner_->compute_units(); }
  uint32_t hbm_banks() const override { return inner_->hbm_banks(); }
  uint64_t bank_bytes() const override { return inner_->bank_bytes(); }
  uint32_t host_threads() const override { return inner_->host_threads(); }
  Result<uint64_t> allocate(std::size_t bytes, uint32_t bank) override {
    return inner_->allocate(bytes, bank);
  }
  void release(uint64_t address) override { inner_->release(address); }
  Status write_memory(uint64_t address, const void* src, std::size_t bytes) override {
    return inner_->write_memory(address, src, bytes);
  }
  Status read_memory(uint64_t address, void* dst, std::size_t bytes) override {
    return inner_->read_memory(address, dst, bytes);
  }
  uint32_t read_register(uint32_t unit, uint32_t offset) override {
    return inner_->read_register(unit, offset);
  }
  void write_register(uint32_t unit, uint32_t offset, uint32_t value) override {
    inner_->write_register(unit, offset, value);
  }
  bool wait_done(uint32_t unit, std::chrono::milliseconds timeout) override {
    return inner_->wait_done(unit, timeout);
  }
  Status link_status() const override { return inner_->link_status(); }
  CardModelBackend* card_model() override { return inner_->card_model(); }

 protected:
  DeviceBackend& inner() const { return *inner_; }

 private:
  std::shared_ptr<DeviceBackend> inner_;
};

// A Device on top of `backend`, after reading and checking its ID registers.
// Device::open uses it for the compiled-in backends; tests attach fakes.
Result<Device> attach_device(std::shared_ptr<DeviceBackend> backend, const std::string& backend_name,
                             uint32_t index);

// Constructors of the compiled-in backends.
Result<std::shared_ptr<DeviceBackend>> open_sw_emu(uint32_t index, const DeviceOptions& options);
Result<std::shared_ptr<DeviceBackend>> open_hw_emu(uint32_t index, const DeviceOptions& options);
Result<std::shared_ptr<DeviceBackend>> open_xrt(uint32_t index, const DeviceOptions& options);
Result<std::shared_ptr<DeviceBackend>> open_perf(uint32_t index, const DeviceOptions& options);
Result<std::shared_ptr<DeviceBackend>> open_uart(uint32_t index, const DeviceOptions& options);

}  // namespace systole::detail
