// SPDX-License-Identifier: Apache-2.0
// A compute unit's memory: its slots, tensors, bf16 copies and kept rows.
#include "unit_memory.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "bf16_rounding.h"
#include "systole/vector_plan.h"

namespace systole {
namespace {

// Before rows are kept in the command lists' bank, the lists' buffer is
// made for this many descriptors, so that kept rows do not take its room.
constexpr std::size_t kKeptRowsListDescriptors = 1000;

}  // namespace

UnitMemory::UnitMemory(Device device, uint32_t unit) : device_(std::move(device)), unit_(unit) {
  commands_.bank = bank(Port::kCommands);
}

uint32_t UnitMemory::bank(Port operand) const {
  return spec::operand_bank(unit_, operand, device_.info().hbm_banks);
}

Status UnitMemory::ensure(Slot& slot, std::size_t bytes) {
  if (slot.buffer && slot.buffer.size() >= bytes) return ok_status();
  // Grow by half again, so that a run of slightly larger calls does not
  // reallocate every time.
  const std::size_t size = std::max(bytes, slot.buffer ? slot.buffer.size() * 3 / 2 : bytes);
  slot.buffer = Buffer();
  auto buffer = device_.allocate(size, slot.bank);
  // Out of room: rows kept for a later launch give theirs up (they are
  // made again when read), and the buffer grows only as far as asked.
  auto out_of_room = [&] { return !buffer.ok() && buffer.status().code() == StatusCode::kUnavailable; };
  if (out_of_room() && drop_kept_rows(slot.bank)) buffer = device_.allocate(size, slot.bank);
  if (out_of_room() && size > bytes) buffer = device_.allocate(bytes, slot.bank);
  if (!buffer.ok()) return buffer.status();
  slot.buffer = std::move(buffer).value();
  return ok_status();
}

Result<uint64_t> UnitMemory::stage(Slot& slot, const float* x, const OperandRows* made, uint32_t rows,
                                   uint32_t cols, bool transposed, uint32_t stride) {
  const std::size_t bytes = std::size_t(rows) * cols * sizeof(uint16_t);
  SYSTOLE_RETURN_IF_ERROR(ensure(slot, bytes));
  // Written straight into the buffer's host view: on the emulators that is
  // device memory, and the sync moves nothing.
  uint16_t* view = slot.buffer.map<uint16_t>();
  if (made)
    made->bf16(view);
  else
    to_bf16(x, rows, cols, transposed, stride, transposed_, view, device_.info().host_threads);
  SYSTOLE_RETURN_IF_ERROR(slot.buffer.sync(Buffer::SyncDirection::kToDevice, bytes, 0));
  return slot.buffer.address();
}

Result<uint64_t> UnitMemory::made_rows(const MatmulCall& call, const OperandRows& made, uint32_t rows,
                                       uint32_t cols, Slot& slot) {
  const RowsKey& key = call.rows_key;
  auto own_slot = [&] { return stage(slot, nullptr, &made, rows, cols, false, cols); };
  if (!key.owner) return own_slot();
  auto kept = std::find_if(kept_rows_.begin(), kept_rows_.end(), [&](const KeptRows& k) {
    return k.key.owner == key.owner && k.key.part == key.part;
  });
  const bool found = kept != kept_rows_.end();
  const bool this_run = found && kept->used_in_run == runs_;
  if (found && kept->key.source == key.source && kept->rows == rows && kept->cols == cols &&
      (call.rows_kept || this_run)) {
    kept->used_in_run = runs_;
    return kept->slot.buffer.address();
  }
  // Rows a call reads as kept that are not (given up for room, or never
  // made), and other rows under a key an earlier call of this launch
  // reads, go into the call's own slot.
  if (call.rows_kept || this_run) return own_slot();
  if (!found) {
    // In the unit's command-list bank, which holds only the lists besides
    // (every port of the unit reaches it): the room the operands' own banks
    // have is left to them. The list buffer is made first, so that kept
    // rows do not take the room it needs.
    const Status room = ensure(commands_, spec::command_list_bytes(kKeptRowsListDescriptors));
    if (room.code() == StatusCode::kUnavailable) return own_slot();
    SYSTOLE_RETURN_IF_ERROR(room);
    kept_rows_.emplace_back();
    kept = std::prev(kept_rows_.end());
    kept->slot.bank = commands_.bank;
  }
  kept->key = RowsKey{key.owner, nullptr, key.part};  // nothing kept until the rows are staged
  kept->used_in_run = runs_;                          // and not given up while they are
  auto address = stage(kept->slot, nullptr, &made, rows, cols, false, cols);
  if (!address.ok() && address.status().code() == StatusCode::kUnavailable) {
    // The bank has no room to keep them: made again when read again.
    kept_rows_.erase(kept);
    return own_slot();
  }
  if (!address.ok()) return address.status();
  kept->key.source = key.source;
  kept->rows = rows;
  kept->cols = cols;
  return address;
}

bool UnitMemory::drop_kept_rows(uint32_t bank) {
  const std::size_t before = kept_rows_.size();
  kept_rows_.remove_if(
      [&](const KeptRows& kept) { return kept.slot.bank == bank && kept.used_in_run != runs_; });
  return kept_rows_.size() != before;
}

std::size_t UnitMemory::kept_rows_bytes() const {
  std::size_t bytes = 0;
  for (const KeptRows& kept : kept_rows_)
    if (kept.key.source) bytes += std::size_t(kept.rows) * kept.cols * sizeof(uint16_t);
  return bytes;
}

Status UnitMemory::no_vector_engine(const std::string& what) {
  return Status(StatusCode::kUnavailable,
                what +
                    ": tensors on the card need the compute units' vector engine, which this device's units "
                    "do not have");
}

std::size_t UnitMemory::copied_tensors(uint64_t except) const {
  std::vector<uint64_t> sources;
  for (const Copy& copy : copies_)
    if (copy.source != except && !copy.alive.expired()) sources.push_back(copy.source);
  std::sort(sources.begin(), sources.end());
  return std::size_t(std::unique(sources.begin(), sources.end()) - sources.begin());
}

Result<DeviceTensor> UnitMemory::allocate(std::size_t count) {
  if (!vector_engine()) return no_vector_engine("allocate");
  // The copies of tensors that are gone go with them.
  copies_.erase(
      std::remove_if(copies_.begin(), copies_.end(), [](const Copy& copy) { return copy.alive.expired(); }),
      copies_.end());
  Slot slot;
  slot.bank = bank(Port::kC);
  SYSTOLE_RETURN_IF_ERROR(ensure(slot, std::max<std::size_t>(count, 1) * sizeof(float)));
  return DeviceTensor::over(std::move(slot.buffer), 0, count);
}

Result<uint64_t> UnitMemory::result(const DeviceTensor& c, std::size_t count, const std::string& what) {
  if (!c) return Status(StatusCode::kInvalidArgument, what + ": no tensor on the card");
  if (c.is_view()) return Status(StatusCode::kInvalidArgument, what + " is a view; nothing writes one");
  if (count > c.count())
    return Status(StatusCode::kInvalidArgument, what + " writes " + std::to_string(count) +
                                                    " values into a tensor of " + std::to_string(c.count()));
  c.mark_written();
  return c.address();
}

Result<uint64_t> UnitMemory::address(const DeviceTensor& x, std::size_t count, const std::string& what) {
  if (!x) return Status(StatusCode::kInvalidArgument, what + " is not on the card");
  if (count > x.count())
    return Status(StatusCode::kInvalidArgument, what + " reads " + std::to_string(count) +
                                                    " values of a tensor the card holds " +
                                                    std::to_string(x.count()) + " of");
  if (!x.reads_in_order())
    return Status(
        StatusCode::kInvalidArgument,
        what +
            " is a view of a card tensor whose blocks read transposed; only a product's operand can "
            "read it");
  return x.address();
}

Result<std::vector<spec::CommandRecord>> UnitMemory::view_copy(const DeviceTensor& view, uint32_t rows,
                                                               uint32_t cols, bool transposed,
                                                               uint32_t stride, uint64_t z,
                                                               const std::string& what) {
  const uint32_t r = view.block_rows(), c = view.block_cols();
  const std::size_t offset = view.offset();
  const std::size_t block = std::size_t(r) * c;
  // X as stored: transposed, op(X)'s columns are its rows.
  const uint32_t stored_rows = transposed ? cols : rows, stored_cols = transposed ? rows : cols;
  const std::size_t values = std::size_t(stored_rows) * stored_cols;
  const bool whole_blocks = offset % block == 0 && values % block == 0;
  // Packed over whole blocks: each block's transpose in turn. Transposed,
  // X's rows a block's columns (stored_cols = r): row i of op(X) is block
  // row i of every block.
  const bool packed = !transposed && stride == stored_cols && whole_blocks;
  const bool block_rows = transposed && stride == r && stored_cols == r && whole_blocks;
  if (!packed && !block_rows)
    return Status(StatusCode::kInvalidArgument,
                  what + " reads a view of a card tensor (blocks of " + std::to_string(r) + " x " +
                      std::to_string(c) + " read transposed) as " + std::to_string(stored_rows) + " x " +
                      std::to_string(stored_cols) + (transposed ? " transposed" : "") + ", row stride " +
                      std::to_string(stride) + ", from value " + std::to_string(offset) +
                      ", which does not fall on whole blocks");
  if (values > view.count())
    return Status(StatusCode::kInvalidArgument, what + " reads " + std::to_string(values) +
                                                    " values of a view of " + std::to_string(view.count()));
  const uint64_t base = view.address();
  const std::size_t blocks = values / block;
  std::vector<spec::CommandRecord> made;
  if (packed) {
    // Each block's transpose in turn.
    for (std::size_t b = 0; b < blocks; ++b)
      SYSTOLE_RETURN_IF_ERROR(append_vector_plan(
          to_bf16_problem(r, c, c, true, base + b * block * sizeof(float), z + b * block * sizeof(uint16_t)),
          made));
  } else {
    // Block row i of every block in turn.
    for (uint32_t i = 0; i < r; ++i)
      SYSTOLE_RETURN_IF_ERROR(append_vector_plan(
          to_bf16_problem(uint32_t(blocks), c, block, false, base + std::size_t(i) * c * sizeof(float),
                          z + std::size_t(i) * blocks * c * sizeof(uint16_t)),
          made));
  }
  return made;
}

Result<uint64_t> UnitMemory::copy(const DeviceTensor& x_card, uint32_t rows, uint32_t cols, bool transposed,
                                  uint32_t stride, Port operand, const std::string& what,
                                  std::vector<spec::CommandRecord>& records) {
  // X as stored: transposed, op(X)'s columns are its rows.
  const uint32_t stored_rows = transposed ? cols : rows, stored_cols = transposed ? rows : cols;
  const std::size_t span = std::size_t(stored_rows - 1) * stride + stored_cols;
  if (!vector_engine()) return no_vector_engine(what);
  const uint64_t source = x_card.id();
  const std::weak_ptr<const void> alive = x_card.lifetime();
  const std::size_t offset = x_card.offset();
  uint64_t source_address = 0;
  const DeviceTensor* view = nullptr;  // a view whose blocks read transposed
  if (x_card.reads_in_order()) {
    auto at = address(x_card, span, what);
    if (!at.ok()) return at.status();
    source_address = *at;
  } else {
    view = &x_card;
  }
  const uint32_t block_rows = view ? view->block_rows() : 0, block_cols = view ? view->block_cols() : 0;
  auto found = std::find_if(copies_.begin(), copies_.end(), [&](const Copy& copy) {
    return copy.source == source && copy.block_rows == block_rows && copy.block_cols == block_cols &&
           copy.offset == offset && copy.rows == rows && copy.cols == cols && copy.stride == stride &&
           copy.transposed == transposed && copy.operand == operand;
  });
  if (found == copies_.end()) {
    Copy copy{source, block_rows, block_cols, alive, offset, rows, cols, stride, transposed, operand, {}, 0};
    // In the memory of a copy of the operand whose tensor has gone, if any.
    found = std::find_if(copies_.begin(), copies_.end(),
                         [&](const Copy& gone) { return gone.operand == operand && gone.alive.expired(); });
    if (found != copies_.end()) {
      copy.slot = std::move(found->slot);
      *found = std::move(copy);
    } else {
      copy.slot.bank = bank(operand);
      copies_.push_back(std::move(copy));
      found = copies_.end() - 1;
    }
  }
  SYSTOLE_RETURN_IF_ERROR(ensure(found->slot, std::size_t(rows) * cols * sizeof(uint16_t)));
  const uint64_t z = found->slot.buffer.address();
  std::vector<spec::CommandRecord> made;
  if (view) {
    // Checked on every read: the viewed tensor may have gone.
    auto blocks = view_copy(*view, rows, cols, transposed, stride, z, what);
    if (!blocks.ok()) return blocks.status();
    made = std::move(blocks).value();
  } else {
    SYSTOLE_RETURN_IF_ERROR(append_vector_plan(
        to_bf16_problem(stored_rows, stored_cols, stride, transposed, source_address, z), made));
  }
  if (found->made_from != x_card.version()) {
    records.insert(records.end(), made.begin(), made.end());
    found->made_from = x_card.version();
  }
  return z;
}

}  // namespace systole
