// SPDX-License-Identifier: Apache-2.0
// The one owner of a compute unit's memory (DeviceMatmul's): the buffers its
// launches stage operands, results and command lists in, grown to the
// largest call seen; the tensors it makes (allocate); the bf16 copies that
// products read of card tensors, keyed by the tensor's identity, made again
// after the tensor is written and released with it; and made rows kept for
// a later launch. Nothing here is found by a host address.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "systole/device_tensor.h"
#include "systole/driver.h"
#include "systole/matmul.h"
#include "systole/status.h"

namespace systole {

// The kernel port of an operand, A, B, C or the command list, named apart
// from the Operand a call reads. Unit u keeps its buffers in banks 4u ..
// 4u+3 (the banks Makefile.fpga connects to its ports), each port's in its
// own (spec::operand_bank).
using Port = spec::Operand;

class UnitMemory {
 public:
  // One buffer in one of the unit's banks, reallocated larger when a call
  // needs it.
  using Slot = UnitSlot;

  UnitMemory() = default;
  UnitMemory(Device device, uint32_t unit);

  // The unit's bank for an operand (spec::operand_bank): A, B, C and the
  // command lists each in their own.
  uint32_t bank(Port operand) const;
  // The command lists' buffer.
  Slot& commands() { return commands_; }
  // A new launch is being put together: rows kept for it are not given up
  // for room while it is.
  void begin_run() { ++runs_; }

  // At least `bytes` in the slot (its values are not kept when it grows).
  // Out of room, rows kept for a later launch give theirs up (they are made
  // again when read), and the buffer grows only as far as asked.
  Status ensure(Slot& slot, std::size_t bytes);
  // op(X) (rows x cols) as bf16 in the slot's buffer, on the device: the
  // host values x rounded, or the bf16 rows `made` gives when it is set.
  Result<uint64_t> stage(Slot& slot, const float* x, const OperandRows* made, uint32_t rows, uint32_t cols,
                         bool transposed, uint32_t stride);
  // The device address of the rows `made` gives for one of call's operands
  // (rows x cols): staged into `slot`, or with a key into the rows kept
  // under it (into `slot` when the bank has no room for them), or those
  // rows as they are (MatmulCall::rows_kept).
  Result<uint64_t> made_rows(const MatmulCall& call, const OperandRows& made, uint32_t rows, uint32_t cols,
                             Slot& slot);
  // Bytes of made rows kept (MatmulCall::rows_key).
  std::size_t kept_rows_bytes() const;

  // A tensor of `count` values in the unit's C bank; its memory goes with
  // its last handle.
  Result<DeviceTensor> allocate(std::size_t count);
  // A bf16 copy of op(X) (rows x cols, X stored from x's first value with
  // `stride`) made on the card, for the product's operand `operand`: its
  // device address, with the to_bf16 descriptors that make it appended to
  // `records` when the copy is not current. A view (DeviceTensor's
  // blocks_transposed) is copied a block at a time: op(X) packed over
  // whole blocks (X's rows whole blocks, or rows that split blocks
  // evenly), or op(X) = X^T where X's rows are one block's transposed
  // rows. An error names `what` for a read that does not fit x.
  Result<uint64_t> copy(const DeviceTensor& x, uint32_t rows, uint32_t cols, bool transposed, uint32_t stride,
                        Port operand, const std::string& what, std::vector<spec::CommandRecord>& records);

  // The device address of a result written into `c` (count values), which
  // must be a tensor, not a view; c's values are a new version from then
  // on (the copies made from them are out of date).
  Result<uint64_t> result(const DeviceTensor& c, std::size_t count, const std::string& what);
  // The device address of the first of `count` values of x (a tensor, or a
  // view that reads its values in order); an error naming `what` otherwise.
  static Result<uint64_t> address(const DeviceTensor& x, std::size_t count, const std::string& what);
  // How many tensors, other than the one whose id is `except`, have bf16
  // copies on the card now.
  std::size_t copied_tensors(uint64_t except) const;

  bool vector_engine() const { return device_.info().has_vector_engine(); }
  // The refusal of card tensors where the units have no vector engine.
  static Status no_vector_engine(const std::string& what);

 private:
  // Gives up the rows kept in `bank` that the launch being put together
  // does not read; whether there were any.
  bool drop_kept_rows(uint32_t bank);
  // The to_bf16 descriptors that make op(X) (rows x cols, X stored at
  // `offset` of `view` with `stride`) packed at z, in whole blocks; an error
  // for a read that does not fall on them.
  static Result<std::vector<spec::CommandRecord>> view_copy(const DeviceTensor& view, uint32_t rows,
                                                            uint32_t cols, bool transposed, uint32_t stride,
                                                            uint64_t z, const std::string& what);

  Device device_;
  uint32_t unit_ = 0;
  Slot commands_;
  std::vector<float> transposed_;  // stage()'s transposition
  uint64_t runs_ = 0;

  // A bf16 copy of an operand on the card: where it comes from (the id of
  // the card tensor it reads, and the blocks of the view it reads
  // through), whether that tensor still lives, and the tensor's version it
  // was made from (0: not made yet). The slot of a copy whose tensor has
  // gone serves the next copy.
  struct Copy {
    uint64_t source = 0;
    uint32_t block_rows = 0, block_cols = 0;
    std::weak_ptr<const void> alive;
    std::size_t offset = 0;
    uint32_t rows = 0, cols = 0, stride = 0;
    bool transposed = false;
    Port operand = Port::kB;
    Slot slot;
    uint64_t made_from = 0;
  };
  std::vector<Copy> copies_;

  // Made rows kept on the card, one set per owner and part: what they were
  // made from (key.source, null while nothing is kept), their shape, and
  // the last launch that reads them.
  struct KeptRows {
    RowsKey key;
    uint32_t rows = 0, cols = 0;
    uint64_t used_in_run = 0;
    Slot slot;
  };
  std::list<KeptRows> kept_rows_;  // a list: ensure() drops some while one is staged
};

}  // namespace systole
