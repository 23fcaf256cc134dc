// SPDX-License-Identifier: Apache-2.0
// First-fit allocation of device memory per HBM bank.
#include "bank_allocator.h"

#include <string>

namespace systole::detail {

BankAllocator::BankAllocator(uint32_t banks, uint64_t bank_bytes) : bank_bytes_(bank_bytes), free_(banks) {
  for (uint32_t bank = 0; bank < banks; ++bank) free_[bank][bank * bank_bytes] = bank_bytes;
}

Result<uint64_t> BankAllocator::allocate(uint64_t bytes, uint32_t bank) {
  if (bank >= free_.size())
    return Status(
        StatusCode::kInvalidArgument,
        "bank " + std::to_string(bank) + " does not exist (device has " + std::to_string(free_.size()) + ")");
  if (bytes == 0) return Status(StatusCode::kInvalidArgument, "buffer size must be > 0");
  const uint64_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  std::lock_guard<std::mutex> lock(mutex_);
  auto& blocks = free_[bank];
  for (auto it = blocks.begin(); it != blocks.end(); ++it) {
    if (it->second < rounded) continue;
    const uint64_t address = it->first;
    const uint64_t rest = it->second - rounded;
    blocks.erase(it);
    if (rest > 0) blocks[address + rounded] = rest;
    used_[address] = rounded;
    return address;
  }
  return Status(StatusCode::kUnavailable, "bank " + std::to_string(bank) + " has no free block of " +
                                              std::to_string(bytes) + " bytes (bank size " +
                                              std::to_string(bank_bytes_) + ")");
}

uint64_t BankAllocator::release(uint64_t address, const std::function<void(uint64_t, uint64_t)>& scrub) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto used = used_.find(address);
  if (used == used_.end()) return 0;
  const uint64_t size = used->second;
  if (scrub) scrub(address, size);
  used_.erase(used);
  auto& blocks = free_[address / bank_bytes_];
  auto next = blocks.emplace(address, size).first;
  // Coalesce with the following block, then with the preceding one.
  auto after = std::next(next);
  if (after != blocks.end() && next->first + next->second == after->first) {
    next->second += after->second;
    blocks.erase(after);
  }
  if (next != blocks.begin()) {
    auto before = std::prev(next);
    if (before->first + before->second == next->first) {
      before->second += next->second;
      blocks.erase(next);
    }
  }
  return size;
}

}  // namespace systole::detail
