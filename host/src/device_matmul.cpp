// SPDX-License-Identifier: Apache-2.0
// Matrix products on a compute unit: operands to bf16 (bf16_rounding.h),
// staged in the unit's banks, tiled by plan_gemm, one launch per call
// list.
#include <algorithm>
#include <cstring>
#include <iterator>
#include <optional>
#include <utility>

#include "bf16_rounding.h"
#include "systole/boards.h"
#include "systole/matmul.h"
#include "systole/trace.h"
#include "systole/vector_plan.h"

namespace systole {
namespace {

// Unit u keeps its buffers in banks 4u .. 4u+3 (the banks Makefile.fpga
// connects to its ports): A, B, C and the command list each in their own
// (spec::operand_bank).
using spec::Operand;

// The command-list buffer's first size: lists of 1,000 descriptors.
constexpr std::size_t kCommandBytes = spec::command_list_bytes(1000);

}  // namespace

Result<DeviceTensor> MatmulExecutor::allocate(std::size_t) {
  return Status(StatusCode::kUnavailable, "allocate: this executor keeps no tensors on the card");
}

Status MatmulExecutor::relu_mask_on_card(const DeviceTensor&, const DeviceTensor&, const DeviceTensor&) {
  return Status(StatusCode::kUnavailable, "relu mask: this executor keeps no tensors on the card");
}

Status MatmulExecutor::conv_input_gradient_on_card(const ConvShape&, uint32_t, const float*,
                                                   const DeviceTensor&, const float*, const DeviceTensor&,
                                                   float*) {
  return Status(StatusCode::kUnavailable,
                "conv input gradient on card: this executor keeps no tensors on the card");
}

Result<std::unique_ptr<DeviceMatmul>> DeviceMatmul::create(Device device, uint32_t unit,
                                                           std::chrono::milliseconds launch_timeout) {
  if (!device) return Status(StatusCode::kInvalidArgument, "no device");
  if (unit >= device.info().compute_units)
    return Status(StatusCode::kInvalidArgument, "compute unit " + std::to_string(unit) +
                                                    " does not exist (device has " +
                                                    std::to_string(device.info().compute_units) + ")");
  std::unique_ptr<DeviceMatmul> matmul(new DeviceMatmul());
  matmul->device_ = device;
  matmul->unit_ = unit;
  matmul->timeout_ = launch_timeout;
  matmul->commands_.bank = spec::operand_bank(unit, Operand::kCommands, device.info().hbm_banks);
  return matmul;
}

Status DeviceMatmul::ensure(Slot& slot, std::size_t bytes) {
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

Result<uint64_t> DeviceMatmul::stage(Slot& slot, const float* x, const OperandRows* made, uint32_t rows,
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

Result<uint64_t> DeviceMatmul::made_rows(const MatmulCall& call, const OperandRows& made, uint32_t rows,
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
    const Status room = ensure(commands_, kCommandBytes);
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

bool DeviceMatmul::drop_kept_rows(uint32_t bank) {
  const std::size_t before = kept_rows_.size();
  kept_rows_.remove_if(
      [&](const KeptRows& kept) { return kept.slot.bank == bank && kept.used_in_run != runs_; });
  return kept_rows_.size() != before;
}

std::size_t DeviceMatmul::kept_rows_bytes() const {
  std::size_t bytes = 0;
  for (const KeptRows& kept : kept_rows_)
    if (kept.key.source) bytes += std::size_t(kept.rows) * kept.cols * sizeof(uint16_t);
  return bytes;
}

void Intervals::add(std::size_t begin, std::size_t end) {
  if (begin >= end) return;
  // Merge with every span it touches; the list stays sorted and disjoint.
  auto first = std::lower_bound(spans_.begin(), spans_.end(), begin,
                                [](const auto& span, std::size_t at) { return span.second < at; });
  auto last = first;
  while (last != spans_.end() && last->first <= end) {
    begin = std::min(begin, last->first);
    end = std::max(end, last->second);
    ++last;
  }
  first = spans_.erase(first, last);
  spans_.insert(first, {begin, end});
}

bool Intervals::contains(std::size_t begin, std::size_t end) const {
  auto span = std::lower_bound(spans_.begin(), spans_.end(), begin,
                               [](const auto& s, std::size_t at) { return s.second <= at; });
  return begin >= end || (span != spans_.end() && span->first <= begin && end <= span->second);
}

std::vector<std::pair<std::size_t, std::size_t>> Intervals::gaps(std::size_t count) const {
  std::vector<std::pair<std::size_t, std::size_t>> gaps;
  std::size_t at = 0;
  for (const auto& [begin, end] : spans_) {
    if (begin >= count) break;
    if (begin > at) gaps.push_back({at, begin});
    at = std::max(at, end);
  }
  if (at < count) gaps.push_back({at, count});
  return gaps;
}

Status DeviceMatmul::no_vector_engine(const std::string& what) {
  return Status(StatusCode::kUnavailable,
                what +
                    ": tensors on the card need the compute units' vector engine, which this device's units "
                    "do not have");
}

bool DeviceMatmul::supports(Feature feature) const {
  switch (feature) {
    case Feature::kCardTensors:
    case Feature::kConvInputGradient:
      // Both make bf16 copies and sums with the vector engine.
      return device_.info().has_vector_engine();
  }
  return false;
}

void DeviceMatmul::keep_resident(const ResidentParameters& resident) {
  resident_ = resident;
  copies_.clear();
  pending_.clear();
  card_read_.clear();
  card_written_.clear();
}

void DeviceMatmul::values_changed() {
  if (resident_.values) invalidate_copies(resident_.values);
}

std::size_t DeviceMatmul::copied_tensors() const {
  std::vector<uint64_t> sources;
  for (const Copy& copy : copies_)
    if (copy.source != resident_.values.id() && !copy.alive.expired()) sources.push_back(copy.source);
  std::sort(sources.begin(), sources.end());
  return std::size_t(std::unique(sources.begin(), sources.end()) - sources.begin());
}

void DeviceMatmul::invalidate_copies(const DeviceTensor& written) {
  for (Copy& copy : copies_)
    if (copy.source == written.id()) copy.current = false;  // read directly or through a view
}

Result<DeviceTensor> DeviceMatmul::allocate(std::size_t count) {
  if (!supports(Feature::kCardTensors)) return no_vector_engine("allocate");
  // The copies of tensors that are gone go with them.
  copies_.erase(
      std::remove_if(copies_.begin(), copies_.end(), [](const Copy& copy) { return copy.alive.expired(); }),
      copies_.end());
  Slot slot;
  slot.bank = spec::operand_bank(unit_, Operand::kC, device_.info().hbm_banks);
  SYSTOLE_RETURN_IF_ERROR(ensure(slot, std::max<std::size_t>(count, 1) * sizeof(float)));
  return DeviceTensor::over(std::move(slot.buffer), 0, count);
}

Result<uint64_t> DeviceMatmul::card_result(const DeviceTensor& c, std::size_t count,
                                           const std::string& what) {
  if (!c) return Status(StatusCode::kInvalidArgument, what + ": no tensor on the card");
  if (c.is_view()) return Status(StatusCode::kInvalidArgument, what + " is a view; nothing writes one");
  if (count > c.count())
    return Status(StatusCode::kInvalidArgument, what + " writes " + std::to_string(count) +
                                                    " values into a tensor of " + std::to_string(c.count()));
  invalidate_copies(c);
  return c.address();
}

Result<uint64_t> DeviceMatmul::card_address(const DeviceTensor& x, std::size_t count,
                                            const std::string& what) {
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

Result<std::vector<spec::CommandRecord>> DeviceMatmul::view_copy(const DeviceTensor& view, uint32_t rows,
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

Result<std::optional<uint64_t>> DeviceMatmul::card_operand(const DeviceTensor& x_card, uint32_t rows,
                                                           uint32_t cols, bool transposed, uint32_t stride,
                                                           Operand operand,
                                                           std::vector<spec::CommandRecord>& records) {
  // X as stored: transposed, op(X)'s columns are its rows.
  const uint32_t stored_rows = transposed ? cols : rows, stored_cols = transposed ? rows : cols;
  const std::size_t span = std::size_t(stored_rows - 1) * stride + stored_cols;
  if (!x_card) return std::optional<uint64_t>();
  const char* const what = operand == Operand::kA ? "matmul: operand A" : "matmul: operand B";
  if (!supports(Feature::kCardTensors)) return no_vector_engine(what);
  const uint64_t source = x_card.id();
  const std::weak_ptr<const void> alive = x_card.lifetime();
  const std::size_t offset = x_card.offset();
  uint64_t source_address = 0;
  const DeviceTensor* view = nullptr;  // a view whose blocks read transposed
  if (x_card.reads_in_order()) {
    auto address = card_address(x_card, span, what);
    if (!address.ok()) return address.status();
    source_address = *address;
  } else {
    view = &x_card;
  }
  // What the card reads of the parameters' values the host need not.
  if (x_card.same_values(resident_.values)) card_read_.add(offset, offset + span);
  const uint32_t block_rows = view ? view->block_rows() : 0, block_cols = view ? view->block_cols() : 0;
  auto found = std::find_if(copies_.begin(), copies_.end(), [&](const Copy& copy) {
    return copy.source == source && copy.block_rows == block_rows && copy.block_cols == block_cols &&
           copy.offset == offset && copy.rows == rows && copy.cols == cols && copy.stride == stride &&
           copy.transposed == transposed && copy.operand == operand;
  });
  if (found == copies_.end()) {
    Copy copy{source, block_rows, block_cols, alive,   offset, rows,
              cols,   stride,     transposed, operand, {},     false};
    copy.slot.bank = spec::operand_bank(unit_, operand, device_.info().hbm_banks);
    copies_.push_back(std::move(copy));
    found = copies_.end() - 1;
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
  if (!found->current) {
    records.insert(records.end(), made.begin(), made.end());
    found->current = true;
  }
  return std::optional<uint64_t>(z);
}

Result<uint64_t> DeviceMatmul::operand(const float* x, const DeviceTensor& x_card, uint32_t rows,
                                       uint32_t cols, bool transposed, uint32_t stride, Operand which,
                                       Slot& slot, std::vector<spec::CommandRecord>& records) {
  auto card = card_operand(x_card, rows, cols, transposed, stride, which, records);
  if (!card.ok()) return card.status();
  if (*card) return **card;
  return stage(slot, x, nullptr, rows, cols, transposed, stride);
}

Status DeviceMatmul::relu_mask_on_card(const DeviceTensor& gradient, const DeviceTensor& output,
                                       const DeviceTensor& masked) {
  const std::size_t count = masked.count();
  auto x = card_address(gradient, count, "relu mask: the gradient");
  if (!x.ok()) return x.status();
  auto y = card_address(output, count, "relu mask: the layer's output");
  if (!y.ok()) return y.status();
  const uint64_t x_addr = *x, y_addr = *y;
  auto z = card_result(masked, count, "relu mask: the masked gradient");
  if (!z.ok()) return z.status();
  VectorProblem mask;
  mask.opcode = spec::Opcode::kReluGrad;
  mask.n = count;
  mask.x = x_addr;
  mask.y = y_addr;
  mask.z = *z;
  return append_vector_plan(mask, pending_);
}

void DeviceMatmul::ensure_call_slots(std::size_t calls) {
  const uint32_t banks = device_.info().hbm_banks;
  while (a_.size() < calls) {
    a_.push_back({Buffer(), spec::operand_bank(unit_, Operand::kA, banks)});
    b_.push_back({Buffer(), spec::operand_bank(unit_, Operand::kB, banks)});
    c_.push_back({Buffer(), spec::operand_bank(unit_, Operand::kC, banks)});
  }
}

Buffer* DeviceMatmul::import_result(std::size_t call, float* c, std::size_t bytes) {
  // Importing C and ending the import cost about 0.06 us here, copying it
  // down from the cache 0.03 us for 4 KiB and 0.12 us for 16 KiB: smaller
  // results are copied.
  constexpr std::size_t kImportBytes = 16 << 10;
  if (!imports_host_ || bytes < kImportBytes) return nullptr;
  auto imported = device_.import_host(c, bytes);
  if (!imported.ok()) {
    // A device that reaches only its own memory has C copied down from now
    // on; any other refusal, this time.
    if (imported.status().code() == StatusCode::kUnavailable) imports_host_ = false;
    return nullptr;
  }
  if (imported_.size() <= call) imported_.resize(call + 1);
  imported_[call] = std::move(imported).value();
  ++results_in_place_;
  return &imported_[call];
}

Status DeviceMatmul::run(const std::vector<MatmulCall>& calls) {
  const DeviceInfo& info = device_.info();
  ensure_call_slots(calls.size());
  imported_.clear();
  ++runs_;
  using Clock = Trace::Clock;
  const Clock::time_point begun = Clock::now();
  double launch_seconds = 0;
  const uint32_t track = Trace::unit_track(unit_);
  // The vector work queued for this launch and the copies the card makes
  // first, then the products (pending_ keeps records_' memory).
  records_.clear();
  std::swap(records_, pending_);
  std::vector<spec::CommandRecord>& records = records_;
  std::vector<spec::CommandRecord>& products = products_;
  products.clear();
  // Products whose C stays on the card (not downloaded).
  std::vector<char>& on_card = on_card_;
  on_card.assign(calls.size(), false);
  std::optional<TraceScope> upload(std::in_place, "upload", "device", track);  // until the first launch
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const MatmulCall& call = calls[i];
    if (!(call.a || call.a_rows || call.a_card) || !(call.b || call.b_rows || call.b_card) ||
        !(call.c || call.c_card))
      return Status(StatusCode::kInvalidArgument, "matmul: an operand is missing");
    if ((call.a_rows && call.a_transposed) || (call.b_rows && call.b_transposed))
      return Status(StatusCode::kInvalidArgument, "matmul: an operand given as rows is not transposed");
    if ((call.a_card && call.a_rows) || (call.b_card && call.b_rows))
      return Status(StatusCode::kInvalidArgument, "matmul: an operand is given both as rows and on the card");
    // C in the card's copy of the parameters' gradients (a weight's).
    const bool c_resident = call.c_card.same_values(resident_.gradients);
    if (call.c_card && call.accumulate && !c_resident)
      return Status(StatusCode::kInvalidArgument, "matmul: a result left on the card cannot accumulate");
    const uint32_t a_row = call.a_transposed ? call.m : call.k, b_row = call.b_transposed ? call.k : call.n;
    if (call.a_stride() < a_row || call.b_stride() < b_row)
      return Status(StatusCode::kInvalidArgument,
                    "matmul: a row stride (lda " + std::to_string(call.lda) + ", ldb " +
                        std::to_string(call.ldb) + ") is shorter than the stored rows (" +
                        std::to_string(a_row) + ", " + std::to_string(b_row) + ")");
    GemmProblem problem;
    problem.m = call.m;
    problem.n = call.n;
    problem.k = call.k;
    problem.bias = call.bias || call.bias_card;
    problem.relu = call.relu;
    problem.accumulate = call.accumulate;

    auto a = call.a_rows ? made_rows(call, *call.a_rows, call.m, call.k, a_[i])
                         : operand(call.a, call.a_card, call.m, call.k, call.a_transposed, call.a_stride(),
                                   Operand::kA, a_[i], records);
    if (!a.ok()) return a.status();
    problem.a = {*a, call.k};

    auto b = call.b_rows ? made_rows(call, *call.b_rows, call.k, call.n, b_[i])
                         : operand(call.b, call.b_card, call.k, call.n, call.b_transposed, call.b_stride(),
                                   Operand::kB, b_[i], records);
    if (!b.ok()) return b.status();
    problem.b = {*b, call.n};

    const std::size_t c_count = std::size_t(call.m) * call.n, c_bytes = c_count * sizeof(float);
    const std::size_t bias_bytes = call.bias && !call.bias_card ? call.n * sizeof(float) : 0;
    std::size_t bias_offset = 0;  // of a host bias in c_[i]
    if (call.c_card) {
      auto address = card_result(call.c_card, c_count, "matmul: result C");
      if (!address.ok()) return address.status();
      problem.c = {*address, call.n};
      on_card[i] = true;
      if (c_resident) {
        // The product lands in the card's gradients. Accumulating into what
        // the host wrote there, the host's values go up first.
        const std::size_t at = call.c_card.offset();
        if (call.accumulate && !card_written_.contains(at, at + c_count)) {
          if (!call.c)
            return Status(StatusCode::kInvalidArgument,
                          "matmul: accumulating into the card's gradients needs the host's copy (c)");
          SYSTOLE_RETURN_IF_ERROR(call.c_card.part(0, c_count)->write(call.c));
        }
        card_written_.add(at, at + c_count);
      }
    } else if (Buffer* imported = import_result(i, call.c, c_bytes)) {
      // C in the caller's array itself: nothing goes up or comes down.
      problem.c = {imported->address(), call.n};
    } else {
      // C in the call's slot, uploaded only when accumulated into.
      SYSTOLE_RETURN_IF_ERROR(ensure(c_[i], c_bytes + bias_bytes));
      Buffer& c = c_[i].buffer;
      if (call.accumulate) {
        SYSTOLE_RETURN_IF_ERROR(c.write(call.c, c_bytes));
        SYSTOLE_RETURN_IF_ERROR(c.sync(Buffer::SyncDirection::kToDevice, c_bytes, 0));
      }
      problem.c = {c.address(), call.n};
      bias_offset = c_bytes;
    }
    if (bias_bytes) {
      // A bias the card does not hold goes up into the call's C slot,
      // behind C when C is there.
      SYSTOLE_RETURN_IF_ERROR(ensure(c_[i], bias_offset + bias_bytes));
      Buffer& c = c_[i].buffer;
      SYSTOLE_RETURN_IF_ERROR(c.write(call.bias, bias_bytes, bias_offset));
      SYSTOLE_RETURN_IF_ERROR(c.sync(Buffer::SyncDirection::kToDevice, bias_bytes, bias_offset));
      problem.bias_address = c.address() + bias_offset;
    } else if (call.bias_card) {
      auto address = card_address(call.bias_card, call.n, "matmul: the bias");
      if (!address.ok()) return address.status();
      problem.bias_address = *address;
      if (call.bias_card.same_values(resident_.values))
        card_read_.add(call.bias_card.offset(), call.bias_card.offset() + call.n);
    }

    auto planned = plan_gemm(info, problem);
    if (!planned.ok()) return planned.status();
    for (const spec::GemmDescriptor& d : *planned) products.push_back(spec::record_of(d));
  }
  records.insert(records.end(), products.begin(), products.end());
  SYSTOLE_RETURN_IF_ERROR(launch(records, upload, launch_seconds));

  TraceScope download("download", "device", track);
  for (std::size_t i = 0; i < calls.size(); ++i) {
    if (on_card[i] || (i < imported_.size() && imported_[i])) continue;
    const std::size_t bytes = std::size_t(calls[i].m) * calls[i].n * sizeof(float);
    SYSTOLE_RETURN_IF_ERROR(c_[i].buffer.sync(Buffer::SyncDirection::kFromDevice, bytes, 0));
    SYSTOLE_RETURN_IF_ERROR(c_[i].buffer.read(calls[i].c, bytes));
  }
  imported_.clear();
  times_.launch_seconds += launch_seconds;
  times_.staging_seconds += std::chrono::duration<double>(Clock::now() - begun).count() - launch_seconds;
  return ok_status();
}

Status DeviceMatmul::run_vector(const std::vector<spec::CommandRecord>& work) {
  using Clock = Trace::Clock;
  const Clock::time_point begun = Clock::now();
  double launch_seconds = 0;
  std::vector<spec::CommandRecord> records = std::exchange(pending_, {});
  records.insert(records.end(), work.begin(), work.end());
  std::optional<TraceScope> upload(std::in_place, "upload", "device", Trace::unit_track(unit_));
  SYSTOLE_RETURN_IF_ERROR(launch(records, upload, launch_seconds));
  times_.launch_seconds += launch_seconds;
  times_.staging_seconds += std::chrono::duration<double>(Clock::now() - begun).count() - launch_seconds;
  return ok_status();
}

Status DeviceMatmul::launch(const std::vector<spec::CommandRecord>& records,
                            std::optional<TraceScope>& upload, double& launch_seconds) {
  using Clock = Trace::Clock;
  Trace* trace = Trace::installed();
  const uint32_t track = Trace::unit_track(unit_);
  const uint32_t max_descriptors = device_.info().max_descriptors;
  for (std::size_t first = 0; first < records.size(); first += max_descriptors) {
    // Encoded straight into the list buffer's host view.
    const std::size_t count = std::min<std::size_t>(max_descriptors, records.size() - first);
    const std::size_t bytes = spec::command_list_bytes(count);
    SYSTOLE_RETURN_IF_ERROR(ensure(commands_, bytes));
    encode_command_list(&records[first], count, commands_.buffer.map<uint8_t>());
    SYSTOLE_RETURN_IF_ERROR(commands_.buffer.sync(Buffer::SyncDirection::kToDevice, bytes, 0));
    upload.reset();
    const Clock::time_point started = Clock::now();
    auto run = device_.start(unit_, commands_.buffer);
    if (!run.ok()) return run.status();
    ++launches_;
    const Status done = run->wait(timeout_);
    if (done.code() == StatusCode::kTimeout)
      return Status(StatusCode::kTimeout, "compute unit " + std::to_string(unit_) + ": launch " +
                                              std::to_string(launches_) + " did not finish within " +
                                              std::to_string(timeout_.count()) + " ms");
    SYSTOLE_RETURN_IF_ERROR(done);
    const Clock::time_point finished = Clock::now();
    launch_seconds += std::chrono::duration<double>(finished - started).count();
    const spec::PerfCounters counters = run->counters();
    counters_ += counters;
    if (trace) {
      trace->span("launch", "device", track, started, finished,
                  {{"launch", double(launches_)},
                   {"descriptors", double(counters.descriptors_done)},
                   {"busy_cycles", double(counters.busy_cycles)},
                   {"stall_cycles", double(counters.stall_cycles)},
                   {"macs", double(counters.macs)},
                   {"dma_read_bytes", double(counters.dma_read_bytes)},
                   {"dma_write_bytes", double(counters.dma_write_bytes)}});
    }
  }
  return ok_status();
}

}  // namespace systole
