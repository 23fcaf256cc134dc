// SPDX-License-Identifier: Apache-2.0
// A tensor on a compute unit: fp32 values in the unit's memory, named by a
// handle, never by a host address. An executor that keeps tensors on the
// card makes them (MatmulExecutor::allocate); products read and write them
// there; their values reach the host only through read(), which syncs.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>

#include "systole/driver.h"
#include "systole/status.h"

namespace systole {

// `count` fp32 values in a device buffer from a byte offset, or a view of
// them whose blocks read transposed: each block of block_rows() x
// block_cols() values, stored row-major, reads as block_cols() x
// block_rows() (what Flatten makes of an image's channels, without moving
// them). Copies are handles to the same values, as the driver's Buffer is;
// the memory goes when the last handle does.
class DeviceTensor {
 public:
  DeviceTensor() = default;
  // The values of `buffer` from byte `offset` on: `count` of them. Each
  // call makes a new tensor (a new id()), even over the same memory.
  static Result<DeviceTensor> over(Buffer buffer, uint64_t offset, std::size_t count);

  explicit operator bool() const { return storage_ != nullptr; }
  std::size_t count() const { return count_; }
  // The tensor whose values these are, the same for every part and view of
  // it and never reused: what copies of a tensor are keyed by.
  uint64_t id() const { return storage_ ? storage_->id : 0; }
  bool same_values(const DeviceTensor& other) const { return storage_ && storage_ == other.storage_; }
  // Expires when the last handle to the values goes (for a cache of what
  // is made from them).
  std::weak_ptr<const void> lifetime() const { return storage_; }
  // How many times the values have been written (write(), or a product or
  // the vector engine through mark_written()): what is made from them is
  // current while this stays the same.
  uint64_t version() const { return storage_ ? storage_->version.load() : 0; }
  // The values (some of them) were written on the device.
  void mark_written() const {
    if (storage_) ++storage_->version;
  }
  // Elements from the start of the tensor's values to this part's first.
  std::size_t offset() const { return offset_; }
  // The device address of the first value, as stored (a view's too).
  uint64_t address() const;
  const Buffer& buffer() const { return storage_->buffer; }

  // A view's blocks (0 x 0: not a view).
  bool is_view() const { return block_rows_ != 0; }
  uint32_t block_rows() const { return block_rows_; }
  uint32_t block_cols() const { return block_cols_; }
  // Whether the view reads its values in the order they are stored (a
  // view whose blocks are one row or one column), as a tensor does.
  bool reads_in_order() const { return !is_view() || block_rows_ == 1 || block_cols_ == 1; }

  // Values [offset, offset + count) of this tensor; of a view, whole
  // blocks of it. An error names what does not fit.
  Result<DeviceTensor> part(std::size_t offset, std::size_t count) const;
  // Values the memory holds from this tensor's first one on (count() or
  // more), and the first `count` of them as a tensor of the same values:
  // this one shrunk, or grown again, in place (not a view).
  std::size_t room() const { return storage_ ? storage_->count - offset_ : 0; }
  Result<DeviceTensor> resized(std::size_t count) const;
  // This tensor's values viewed as blocks of rows x cols read transposed;
  // an error when they are not whole blocks, or this is a view already.
  Result<DeviceTensor> blocks_transposed(uint32_t rows, uint32_t cols) const;

  // The values as stored into `out` (count() of them), after syncing them
  // from the device; `in` written and synced to the device (a new
  // version).
  Status read(float* out) const;
  Status write(const float* in);

 private:
  struct Storage {
    Buffer buffer;
    uint64_t offset = 0;  // bytes, of the first value
    std::size_t count = 0;
    uint64_t id = 0;
    mutable std::atomic<uint64_t> version{1};  // 0: no values
  };
  std::shared_ptr<const Storage> storage_;
  std::size_t offset_ = 0, count_ = 0;
  uint32_t block_rows_ = 0, block_cols_ = 0;
};

// Values that an operation reads (Operand) or writes (Destination): fp32
// values in host memory, a tensor on the card, or both, for a parameter
// whose values the card keeps beside the host's copy
// (ParameterStore::operand). An executor that keeps tensors on the card
// reads and writes the card's where there is one; any other reads and
// writes the host's. A layer hands its tensors over as they are
// (Activations::operand) and never asks where they live.
template <typename Value>
struct HostOrCard {
  Value* host = nullptr;
  DeviceTensor card;

  HostOrCard() = default;
  HostOrCard(Value* values) : host(values) {}                   // NOLINT(google-explicit-constructor)
  HostOrCard(DeviceTensor tensor) : card(std::move(tensor)) {}  // NOLINT(google-explicit-constructor)
  HostOrCard(Value* values, DeviceTensor tensor) : host(values), card(std::move(tensor)) {}
  // A destination is read as an operand (a result passed on).
  template <typename Other, typename = std::enable_if_t<std::is_convertible_v<Other*, Value*>>>
  HostOrCard(const HostOrCard<Other>& other) : host(other.host), card(other.card) {}  // NOLINT

  explicit operator bool() const { return host || card; }
  // Elements [at, at + count) of it: the host's values from `at`, and
  // that part of the card tensor (an error names what does not fit).
  Result<HostOrCard> part(std::size_t at, std::size_t count) const {
    HostOrCard out(host ? host + at : nullptr);
    if (card) {
      auto piece = card.part(at, count);
      if (!piece.ok()) return piece.status();
      out.card = std::move(piece).value();
    }
    return out;
  }
};
using Operand = HostOrCard<const float>;
using Destination = HostOrCard<float>;

}  // namespace systole
