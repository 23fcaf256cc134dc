// SPDX-License-Identifier: Apache-2.0
// Device memory of the emulated backends: one anonymous mapping for all
// banks. Pages are committed when first touched, so a large address space
// (32 banks of 512 MiB) costs nothing until used. A page of slack follows
// the last bank, so that the fast engine's vector loads, which may read a
// few bytes past an operand's last value (and not use them), stay inside
// the mapping wherever the operand lies; an inaccessible page follows the
// slack, so that a read further past faults rather than reading whatever
// mapping lies next.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "backend.h"
#include "bank_allocator.h"
#include "hex.h"
#include "systole/status.h"
#include "systole/validate.h"

namespace systole::detail {

class DeviceMemory {
 public:
  static constexpr uint64_t kSlackBytes = 4096;

  explicit DeviceMemory(uint64_t bytes) : bytes_(bytes) {
    const uint64_t page = uint64_t(sysconf(_SC_PAGESIZE));
    guard_at_ = (bytes + kSlackBytes + page - 1) / page * page;
    mapped_ = guard_at_ + page;
    void* p =
        mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return;
    base_ = static_cast<uint8_t*>(p);
    if (mprotect(base_ + guard_at_, page, PROT_NONE) != 0) {
      munmap(base_, mapped_);
      base_ = nullptr;
    }
  }
  ~DeviceMemory() {
    if (base_) munmap(base_, mapped_);
  }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  uint8_t* base() const { return base_; }
  uint64_t bytes() const { return bytes_; }
  // Gives the pages of a released buffer back to the host.
  void discard(uint64_t address, uint64_t bytes) { madvise(base_ + address, bytes, MADV_DONTNEED); }

 private:
  uint64_t bytes_;
  uint64_t guard_at_ = 0, mapped_ = 0;  // the guard page's offset; the mapping's size
  uint8_t* base_ = nullptr;
};

// The memory side of an emulated device: the mapping, its per-bank
// allocator, range-checked host access, and the host memory a kernel that
// runs on the host may reach besides (import).
class EmulatedMemory {
 public:
  // Imported host memory lies at device address kHostWindow + its host
  // address (user space is below 2^57 even with 5-level paging), past any
  // bank and below a launch's address limit of twice kHostWindow.
  static constexpr uint64_t kHostWindow = uint64_t(1) << 57;

  EmulatedMemory(uint32_t banks, uint64_t bank_bytes)
      : memory_(uint64_t(banks) * bank_bytes), allocator_(banks, bank_bytes) {}

  bool usable() const { return memory_.base() != nullptr; }
  uint8_t* base() const { return memory_.base(); }
  uint64_t bytes() const { return memory_.bytes(); }

  Result<uint64_t> allocate(std::size_t bytes, uint32_t bank) { return allocator_.allocate(bytes, bank); }
  // The pages are discarded before the block is free again: discarding
  // after would zero the data of a buffer another thread allocated there
  // in between.
  void release(uint64_t address) {
    allocator_.release(address, [this](uint64_t at, uint64_t bytes) { memory_.discard(at, bytes); });
  }
  Status write(uint64_t address, const void* src, std::size_t bytes) {
    SYSTOLE_RETURN_IF_ERROR(check(address, bytes));
    if (bytes) std::memcpy(memory_.base() + address, src, bytes);
    return ok_status();
  }
  Status read(uint64_t address, void* dst, std::size_t bytes) const {
    SYSTOLE_RETURN_IF_ERROR(check(address, bytes));
    if (bytes) std::memcpy(dst, memory_.base() + address, bytes);
    return ok_status();
  }
  uint8_t* shared(uint64_t address, std::size_t bytes) const {
    return check(address, bytes).ok() ? memory_.base() + address : nullptr;
  }

  // Registers [host, host + bytes) and returns its device address.
  Result<uint64_t> import(void* host, std::size_t bytes) {
    const uint64_t at = reinterpret_cast<uintptr_t>(host);
    if (!host || bytes == 0 || at >= kHostWindow || bytes > kHostWindow - at)
      return Status(StatusCode::kInvalidArgument,
                    "cannot import " + std::to_string(bytes) + " bytes of host memory at " + hex(at));
    std::lock_guard<std::mutex> lock(imports_mutex_);
    imports_.push_back({kHostWindow + at, bytes});
    return kHostWindow + at;
  }
  // Ends an import made at `address`; false if `address` is not one.
  bool release_import(uint64_t address) {
    if (address < kHostWindow) return false;
    std::lock_guard<std::mutex> lock(imports_mutex_);
    auto found = std::find_if(imports_.begin(), imports_.end(),
                              [&](const Import& import) { return import.address == address; });
    if (found != imports_.end()) imports_.erase(found);
    return true;
  }
  // The host address of device range [address, address + bytes) where all
  // of it lies in the banks or in one imported range, and `over` bytes
  // past it may be read as well (device memory's slack covers a few; host
  // memory is readable to the end of the page that holds an import's last
  // byte); nullptr otherwise.
  uint8_t* reach(uint64_t address, uint64_t bytes, uint64_t over = 0) const {
    if (spec::in_range(address, bytes, memory_.bytes()))
      return over <= DeviceMemory::kSlackBytes ? memory_.base() + address : nullptr;
    if (address < kHostWindow) return nullptr;
    static const uint64_t page = uint64_t(sysconf(_SC_PAGESIZE));
    std::lock_guard<std::mutex> lock(imports_mutex_);
    for (const Import& import : imports_) {
      const uint64_t end = import.address + import.bytes, readable_end = (end + page - 1) / page * page;
      if (address >= import.address && address <= end && bytes <= end - address &&
          over <= readable_end - (address + bytes))
        return reinterpret_cast<uint8_t*>(uintptr_t(address - kHostWindow));
    }
    return nullptr;
  }

 private:
  Status check(uint64_t address, std::size_t bytes) const {
    if (!spec::in_range(address, bytes, memory_.bytes()))
      return Status(StatusCode::kInvalidArgument, "device range [" + std::to_string(address) + ", +" +
                                                      std::to_string(bytes) + ") is outside device memory");
    return ok_status();
  }

  DeviceMemory memory_;
  BankAllocator allocator_;
  struct Import {
    uint64_t address, bytes;
  };
  mutable std::mutex imports_mutex_;
  std::vector<Import> imports_;  // a few at a time: searched in turn
};

// A backend that owns its device memory (sw_emu, hw_emu): the memory half
// of DeviceBackend, so each backend adds only its registers and its waits.
class EmulatedBackend : public DeviceBackend {
 public:
  EmulatedBackend(uint32_t banks, uint64_t bank_bytes)
      : banks_(banks), bank_bytes_(bank_bytes), memory_(banks, bank_bytes) {}

  bool usable() const { return memory_.usable(); }
  uint32_t hbm_banks() const override { return banks_; }
  uint64_t bank_bytes() const override { return bank_bytes_; }
  Result<uint64_t> allocate(std::size_t bytes, uint32_t bank) override {
    return memory_.allocate(bytes, bank);
  }
  void release(uint64_t address) override {
    if (!memory_.release_import(address)) memory_.release(address);
  }
  Status write_memory(uint64_t address, const void* src, std::size_t bytes) override {
    return memory_.write(address, src, bytes);
  }
  Status read_memory(uint64_t address, void* dst, std::size_t bytes) override {
    return memory_.read(address, dst, bytes);
  }
  uint8_t* shared_memory(uint64_t address, std::size_t bytes) override {
    return memory_.shared(address, bytes);
  }

 protected:
  uint32_t banks_;
  uint64_t bank_bytes_;
  EmulatedMemory memory_;
};

// The emulated backends make 1..64 compute units, one thread each.
inline Status check_emulated_units(uint32_t units) {
  constexpr uint32_t kMaxUnits = 64;
  if (units == 0 || units > kMaxUnits)
    return Status(StatusCode::kInvalidArgument,
                  "compute_units must be 1.." + std::to_string(kMaxUnits) + ", got " + std::to_string(units));
  return Status();
}

}  // namespace systole::detail
