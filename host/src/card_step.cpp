// SPDX-License-Identifier: Apache-2.0
// The card's end of a training step (placement: device).
#include "card_step.h"

#include <algorithm>
#include <utility>

#include "systole/vector_plan.h"

namespace systole {
namespace {

// Bytes of `count` floats (the offset of element `count`).
constexpr uint64_t floats(std::size_t count) { return uint64_t(count) * sizeof(float); }

Status upload_to(Buffer& buffer, const float* values, std::size_t count, uint64_t offset) {
  SYSTOLE_RETURN_IF_ERROR(buffer.write(values, floats(count), offset));
  return buffer.sync(Buffer::SyncDirection::kToDevice, floats(count), offset);
}

Status download(Buffer buffer, float* values, std::size_t count, uint64_t offset) {
  SYSTOLE_RETURN_IF_ERROR(buffer.sync(Buffer::SyncDirection::kFromDevice, floats(count), offset));
  return buffer.read(values, floats(count), offset);
}

// y = x (alpha 1, beta +0, which keeps -0 and reads a subnormal as the sum
// does) over n values.
VectorProblem copy_problem(std::size_t n, uint64_t x, uint64_t y) {
  return axpby_problem(1.0f, 0.0f, n, x, y);
}

}  // namespace

Result<std::unique_ptr<CardStep>> CardStep::create(Device device, const std::vector<uint32_t>& units,
                                                   std::vector<Replica> replicas, Strategy& strategy,
                                                   const OptimizerConfig& optimizer,
                                                   std::vector<std::string>& notices) {
  if (replicas.empty() || replicas[0].store->trainable().empty())
    return std::unique_ptr<CardStep>();  // nothing to keep there
  if (!device.info().has_vector_engine()) {
    notices.push_back(
        "placement: device: the compute units of this device have no vector engine, so "
        "the parameters stay on the host (placement: host)");
    return std::unique_ptr<CardStep>();
  }
  std::unique_ptr<CardStep> card(new CardStep(std::move(replicas), strategy));
  card->update_on_card_ = card->replicas_[0].optimizer->steps_on_engine();
  if (!card->update_on_card_)
    notices.push_back(
        "placement: device: optimizer " + optimizer.name +
        (optimizer.clipnorm > 0 || optimizer.global_clipnorm > 0 ? " with gradient clipping" : "") +
        " has no vector-engine form, so its steps run on the host and move the gradients "
        "and the weights over the host link each step");
  SYSTOLE_RETURN_IF_ERROR(card->allocate(device, units));
  return card;
}

CardStep::~CardStep() {
  for (const Replica& replica : replicas_) (void)replica.store->keep_on_card(DeviceTensor(), DeviceTensor());
}

Status CardStep::allocate(Device device, const std::vector<uint32_t>& units) {
  const std::size_t n = count();
  const uint32_t banks = device.info().hbm_banks;
  shared_ = update_on_card_ && replicas_.size() > 1;
  // Across processes, a card's units chain their sum onto the earlier
  // processes' (its first row); one sum per card crosses to the group.
  previous_row_ = shared_ && strategy_.processes() > 1 ? 1 : 0;
  if (previous_row_) job_sum_.resize(n);
  for (uint32_t r = 0; r < replicas_.size(); ++r) {
    const auto [begin, end] = share(r);
    share_stride_ = std::max(share_stride_, (end - begin + 15) / 16 * 16);
  }
  cards_.resize(replicas_.size());
  using spec::Operand;
  for (uint32_t r = 0; r < replicas_.size(); ++r) {
    Card& card = cards_[r];
    auto allocate = [&](Buffer& buffer, std::size_t values, Operand bank) -> Status {
      auto made = device.allocate(floats(values), spec::operand_bank(units[r], bank, banks));
      if (!made.ok()) return made.status();
      buffer = std::move(made).value();
      return ok_status();
    };
    SYSTOLE_RETURN_IF_ERROR(allocate(card.values, n, Operand::kC));
    SYSTOLE_RETURN_IF_ERROR(allocate(card.gradient, n, Operand::kA));
    if (shared_)
      SYSTOLE_RETURN_IF_ERROR(
          allocate(card.rows, share_stride_ * (previous_row_ + replicas_.size()), Operand::kCommands));
    const Operand slot_banks[] = {Operand::kB, Operand::kCommands};
    std::size_t k = 0;
    if (update_on_card_)
      for (const OptimizerSlot& slot : replicas_[r].optimizer->state())
        if (slot.region == Region::kTrainable)
          SYSTOLE_RETURN_IF_ERROR(allocate(card.slots.emplace_back(), n, slot_banks[k++ % 2]));
    // The layers read and write the card's parameters through these
    // tensors' parts (ParameterStore::card_values, card_gradient).
    ResidentParameters resident;
    for (auto [tensor, buffer] :
         {std::pair{&resident.values, &card.values}, {&resident.gradients, &card.gradient}}) {
      auto made = DeviceTensor::over(*buffer, 0, n);
      if (!made.ok()) return made.status();
      *tensor = std::move(made).value();
    }
    SYSTOLE_RETURN_IF_ERROR(replicas_[r].store->keep_on_card(resident.values, resident.gradients));
    replicas_[r].unit->keep_resident(resident);
    SYSTOLE_RETURN_IF_ERROR(upload(r));
  }
  return ok_status();
}

std::pair<std::size_t, std::size_t> CardStep::share(uint32_t r) const {
  const std::size_t n = count();
  if (!shared_) return {0, n};
  // Whole 64-byte beats, but for the last share's end.
  const std::size_t replicas = replicas_.size();
  auto edge = [&](std::size_t q) { return std::min(n, n * q / replicas / 16 * 16); };
  return {edge(r), r + 1 == replicas ? n : edge(r + 1)};
}

Status CardStep::upload(uint32_t r) {
  const Replica& replica = replicas_[r];
  Card& card = cards_[r];
  const std::vector<float>& values = replica.store->trainable();
  SYSTOLE_RETURN_IF_ERROR(upload_to(card.values, values.data(), values.size(), 0));
  std::size_t k = 0;
  for (const OptimizerSlot& slot : replica.optimizer->state())
    if (slot.region == Region::kTrainable && k < card.slots.size())
      SYSTOLE_RETURN_IF_ERROR(upload_to(card.slots[k++], slot.values->data(), slot.values->size(), 0));
  replica.unit->values_changed();
  return ok_status();
}

Status CardStep::append_sum(uint32_t r, std::size_t from, std::size_t to, bool after_previous,
                            std::vector<spec::CommandRecord>& work) const {
  if (from >= to) return ok_status();
  // Replica r's rows hold its share of every replica's gradients (after the
  // row of the earlier processes' sum, when there is one), replica
  // r + k's copied in the k-th copy, so that each unit's gradients are read
  // by one unit at a time.
  const uint64_t row0 = cards_[r].rows.address() + floats(from - share(r).first);
  const uint32_t n_rows = uint32_t(replicas_.size());
  for (uint32_t k = 0; k < n_rows; ++k) {
    const uint32_t q = (r + k) % n_rows;
    SYSTOLE_RETURN_IF_ERROR(
        append_vector_plan(copy_problem(to - from, cards_[q].gradient.address() + floats(from),
                                        row0 + floats((previous_row_ + q) * share_stride_)),
                           work));
  }
  // Into its own gradients' share, which only this unit reads, and only in
  // the copies above.
  return append_vector_plan(sum_problem(n_rows + (after_previous ? 1 : 0), to - from, share_stride_,
                                        row0 + (after_previous ? 0 : floats(previous_row_ * share_stride_)),
                                        cards_[r].gradient.address() + floats(from)),
                            work);
}

Status CardStep::append_update(uint32_t r, std::vector<spec::CommandRecord>& work) {
  const auto [begin, end] = share(r);
  if (begin >= end) return ok_status();
  const Card& card = cards_[r];
  const Optimizer::EngineStep step = replicas_[r].optimizer->take_engine_step();
  const uint64_t values = card.values.address() + floats(begin);
  if (step.decay_alpha != 0)
    SYSTOLE_RETURN_IF_ERROR(
        append_vector_plan(axpby_problem(step.decay_alpha, 1.0f, end - begin, values, values), work));
  // The update's operands: the gradient, the slots in order, the values.
  VectorProblem update;
  update.opcode = step.update.opcode;
  update.scalars = step.update.scalars;
  update.n = end - begin;
  uint64_t* operands[4] = {&update.x, &update.y, &update.z, &update.w};
  std::size_t k = 0;
  *operands[k++] = card.gradient.address() + floats(begin);
  for (const Buffer& slot : card.slots) *operands[k++] = slot.address() + floats(begin);
  *operands[k] = values;
  return append_vector_plan(update, work);
}

Status CardStep::append_gather(uint32_t r, std::vector<spec::CommandRecord>& work) const {
  // Replica r + k's share in the k-th copy (one reader per unit at a time).
  const uint32_t n_rows = uint32_t(replicas_.size());
  for (uint32_t k = 1; k < n_rows; ++k) {
    const uint32_t q = (r + k) % n_rows;
    const auto [from, to] = share(q);
    if (from < to)
      SYSTOLE_RETURN_IF_ERROR(
          append_vector_plan(copy_problem(to - from, cards_[q].values.address() + floats(from),
                                          cards_[r].values.address() + floats(from)),
                             work));
  }
  return ok_status();
}

Status CardStep::chained_sum(uint32_t r) {
  // Across processes the card's sum continues the earlier processes': their
  // sum goes up into each unit's first row, each unit sums its share after
  // it, and the card's sum goes down and on to the next process
  // (ProcessGroup::chained_sum). The job's sum comes back into each unit's
  // share, except on the last process, whose units computed it.
  const auto [begin, end] = share(r);
  Card& card = cards_[r];
  DeviceMatmul& unit = *replicas_[r].unit;
  const std::size_t first = begin, last = end;  // (a lambda below captures them)
  const ProcessGroup::AddTerms add = [&](const float* previous, std::size_t from, std::size_t to,
                                         float* total) -> Status {
    const std::size_t b = std::max(first, from), e = std::min(last, to);
    if (b >= e) return ok_status();
    if (previous) SYSTOLE_RETURN_IF_ERROR(upload_to(card.rows, previous + b, e - b, floats(b - first)));
    std::vector<spec::CommandRecord> sum;
    SYSTOLE_RETURN_IF_ERROR(append_sum(r, b, e, previous != nullptr, sum));
    SYSTOLE_RETURN_IF_ERROR(unit.run_vector(sum));
    return download(card.gradient, total + b, e - b, floats(b));
  };
  SYSTOLE_RETURN_IF_ERROR(strategy_.chained_sum(r, count(), count(), add, job_sum_.data()));
  const ProcessGroup& group = *strategy_.group();
  if (group.rank() + 1 < group.size())
    SYSTOLE_RETURN_IF_ERROR(upload_to(card.gradient, job_sum_.data() + begin, end - begin, floats(begin)));
  return ok_status();
}

Status CardStep::step(uint32_t r) {
  const Replica& replica = replicas_[r];
  ParameterStore& store = *replica.store;
  DeviceMatmul& unit = *replica.unit;
  Card& card = cards_[r];
  const std::size_t n = count();
  // The gradients the host wrote (host layers') go up beside the
  // products'.
  for (const auto& [begin, end] : unit.card_written().gaps(n))
    SYSTOLE_RETURN_IF_ERROR(
        upload_to(card.gradient, store.gradients().data() + begin, end - begin, floats(begin)));
  unit.clear_written();
  Optimizer& optimizer = *replica.optimizer;
  // One replica per card across processes: its gradient goes to the host's
  // all-reduce (one down, one up, fewer than a chain through the card).
  const bool host_sum = strategy_.processes() > 1 && !shared_;
  if (!update_on_card_ || host_sum) {
    // The gradients cross to the host's all-reduce (the job's order over
    // every replica of every process, in the engine's arithmetic) and the
    // sum comes back; or, for an optimizer without an engine form, the
    // host updates and the new values go up.
    SYSTOLE_RETURN_IF_ERROR(download(card.gradient, store.gradients().data(), n, 0));
    SYSTOLE_RETURN_IF_ERROR(strategy_.all_reduce_sum(r, store.gradients()));
    if (!update_on_card_) {
      SYSTOLE_RETURN_IF_ERROR(download(card.values, store.trainable().data(), n, 0));
      optimizer.apply(store);
      SYSTOLE_RETURN_IF_ERROR(upload_to(card.values, store.trainable().data(), n, 0));
    } else {
      SYSTOLE_RETURN_IF_ERROR(upload_to(card.gradient, store.gradients().data(), n, 0));
    }
  }
  if (update_on_card_) {
    // Each replica sums its share of every replica's gradients, in replica
    // order (the all-reduce's ((+0 + g_0) + g_1) + ...), and updates that
    // share of the values.
    std::vector<spec::CommandRecord> work;
    if (shared_ && previous_row_) {
      SYSTOLE_RETURN_IF_ERROR(chained_sum(r));
    } else if (shared_) {
      SYSTOLE_RETURN_IF_ERROR(strategy_.barrier(r));  // every replica's gradients are in
      const auto [begin, end] = share(r);
      SYSTOLE_RETURN_IF_ERROR(append_sum(r, begin, end, false, work));
    }
    SYSTOLE_RETURN_IF_ERROR(append_update(r, work));
    SYSTOLE_RETURN_IF_ERROR(unit.run_vector(work));
    if (shared_) {
      // Then the others' shares of the values, copied from their units.
      SYSTOLE_RETURN_IF_ERROR(strategy_.barrier(r));
      work.clear();
      SYSTOLE_RETURN_IF_ERROR(append_gather(r, work));
      if (!work.empty()) SYSTOLE_RETURN_IF_ERROR(unit.run_vector(work));
    }
    optimizer.apply_tables(store);
    host_behind_ = true;
  }
  unit.values_changed();
  // What host layers read of the values comes back (the rest only when
  // asked for).
  for (const auto& [begin, end] : unit.card_read().gaps(n))
    SYSTOLE_RETURN_IF_ERROR(
        download(card.values, store.trainable().data() + begin, end - begin, floats(begin)));
  return ok_status();
}

void CardStep::sync_to_host() const {
  if (!host_behind_) return;
  host_behind_ = false;
  // Each share of a slot from the replica that updates it.
  std::vector<std::pair<std::string, std::vector<float>>> slots;
  Status status;
  std::size_t k = 0;
  for (const OptimizerSlot& slot : replicas_[0].optimizer->state()) {
    slots.push_back({slot.name, *slot.values});
    if (slot.region != Region::kTrainable || k >= cards_[0].slots.size()) continue;
    for (uint32_t q = 0; q < replicas_.size() && status.ok(); ++q) {
      const auto [begin, end] = share(q);
      status = download(cards_[q].slots[k], slots.back().second.data() + begin, end - begin, floats(begin));
    }
    ++k;
  }
  for (uint32_t q = 0; q < replicas_.size(); ++q) {
    const Replica& replica = replicas_[q];
    ParameterStore& store = *replica.store;
    if (status.ok())
      status = download(cards_[q].values, store.trainable().data(), store.trainable().size(), 0);
    if (status.ok()) status = replica.optimizer->restore(slots, replica.optimizer->steps());
    if (!status.ok() && sync_status_.ok())
      sync_status_ = Status(status.code(), "bringing the parameters from the card: " + status.message());
  }
}

}  // namespace systole
