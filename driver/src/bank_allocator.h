// SPDX-License-Identifier: Apache-2.0
// First-fit allocator of device address space, one region per HBM bank, for
// the backends that own their memory (sw_emu, hw_emu). Blocks are aligned to
// 4 KiB, as XRT aligns buffer objects.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <vector>

#include "systole/status.h"

namespace systole::detail {

class BankAllocator {
 public:
  static constexpr uint64_t kAlignment = 4096;

  BankAllocator(uint32_t banks, uint64_t bank_bytes);

  // Device address of a new block of `bytes` (> 0) in `bank`.
  Result<uint64_t> allocate(uint64_t bytes, uint32_t bank);
  // Frees the block that starts at `address` and returns its size (0 if
  // none). `scrub(address, size)` runs first, while the block is still in
  // use, so that whoever allocates it next never sees the scrub.
  uint64_t release(uint64_t address, const std::function<void(uint64_t, uint64_t)>& scrub = {});

 private:
  uint64_t bank_bytes_;
  std::mutex mutex_;
  // Per bank: free blocks, start address -> size, coalesced on release.
  std::vector<std::map<uint64_t, uint64_t>> free_;
  std::map<uint64_t, uint64_t> used_;  // start address -> size
};

}  // namespace systole::detail
