// SPDX-License-Identifier: Apache-2.0
// The ordered all-reduce among threads (and processes) and the replica runner.
#include "systole/strategy.h"

#include "systole/vector_ops.h"

#include <algorithm>
#include <string>
#include <thread>

namespace systole {

namespace {

// The job's processes on this host, whose threads share its cores (the
// group's processes could all be here).
uint32_t processes_here(const ProcessGroup* group) { return group ? group->processes_on_this_host() : 1; }

}  // namespace

void ordered_sum(const float* start, const float* const* inputs, std::size_t n, std::size_t begin,
                 std::size_t end, float* out) {
  // The vector engine's sum, so that a card's units summing their
  // gradients give these bits.
  const std::size_t first = start ? 1 : 0;
  spec::vector_sum(
      n + first, [&](std::size_t k) { return k < first ? start : inputs[k - first]; }, begin, end, out);
}

Status ProcessGroup::ordered_sum(const std::vector<const float*>& local, std::size_t count, float* total) {
  return chained_sum(
      count, 0,
      [&](const float* previous, std::size_t begin, std::size_t end, float* out) {
        systole::ordered_sum(previous, local.data(), local.size(), begin, end, out);
        return ok_status();
      },
      total);
}

AllReduce::AllReduce(uint32_t participants, ProcessGroup* group)
    : participants_(participants),
      group_(group),
      buffers_(participants, nullptr),
      piece_statuses_(participants),
      barrier_(participants, SpinWait::cores_for(participants * processes_here(group))) {}

bool AllReduce::barrier(void (AllReduce::*last)()) {
  return barrier_.arrive_and_wait([&] {
    if (last) (this->*last)();
  });
}

void AllReduce::abort() { barrier_.abort(); }

void AllReduce::reset() { barrier_.reset(); }

void AllReduce::prepare() {
  const std::size_t count = buffers_[0]->size();
  inputs_.clear();
  lengths_differ_ = false;
  for (const std::vector<float>* buffer : buffers_) {
    lengths_differ_ |= buffer->size() != count;
    inputs_.push_back(buffer->data());
  }
  if (across_processes()) total_.resize(count);  // only a sum across processes needs it
}

Status AllReduce::failure() const {
  return Status(StatusCode::kUnavailable, "all-reduce aborted: another replica failed");
}

Status AllReduce::wait_for_all(uint32_t) {
  if (participants_ == 1) return ok_status();
  return barrier() ? ok_status() : failure();
}

Status AllReduce::chained_sum(uint32_t me, std::size_t count, std::size_t piece,
                              const ProcessGroup::AddTerms& add, float* total) {
  if (!group_) return Status(StatusCode::kInternal, "all-reduce: a chained sum needs a process group");
  if (!barrier()) return failure();  // every participant's terms are ready
  if (me == 0) {
    // Each piece the group asks for: every participant adds its part, in
    // parallel, between two barriers.
    const ProcessGroup::AddTerms everyone = [&](const float* previous, std::size_t begin, std::size_t end,
                                                float* out) -> Status {
      piece_ = {previous, begin, end, out, true};
      if (!barrier()) return failure();
      piece_statuses_[0] = add(previous, begin, end, out);
      if (!barrier()) return failure();
      for (const Status& status : piece_statuses_)
        if (!status.ok()) return status;
      return ok_status();
    };
    const Status status = group_->chained_sum(count, piece, everyone, total);
    if (!status.ok()) {
      abort();
      return status;
    }
    piece_.more = false;
    if (!barrier()) return failure();  // the others stop waiting for pieces
  } else {
    for (;;) {
      if (!barrier()) return failure();
      if (!piece_.more) break;
      piece_statuses_[me] = add(piece_.previous, piece_.begin, piece_.end, piece_.total);
      if (!barrier()) return failure();
    }
  }
  return barrier() ? ok_status() : failure();  // `total` holds the job's sum
}

Status AllReduce::sum(uint32_t me, std::vector<float>& values) {
  const uint32_t n = participants_;
  if (n == 1 && !across_processes()) return ok_status();
  buffers_[me] = &values;
  if (!barrier(&AllReduce::prepare)) return failure();
  if (lengths_differ_)
    return Status(StatusCode::kInvalidArgument, "all-reduce: replicas passed different lengths");
  const std::size_t count = values.size();
  if (across_processes()) {
    if (me == 0) {
      const Status status = group_->ordered_sum(inputs_, count, total_.data());
      if (!status.ok()) {
        abort();
        return status;
      }
    }
    if (!barrier()) return failure();
    // total_ is only written again after the next call's first barrier, which
    // this participant reaches only after copying.
    std::copy(total_.begin(), total_.end(), values.begin());
    return ok_status();
  }
  // This participant's slice of every buffer, which no other participant
  // touches: the sum into the first buffer's slice (each element of term 0
  // is read just before it is written), then that slice into the others'.
  const std::size_t begin = count * me / n, end = count * (me + 1) / n;
  float* const sum = buffers_[0]->data();
  ordered_sum(nullptr, inputs_.data(), n, begin, end, sum);
  for (uint32_t k = 1; k < n; ++k) std::copy(sum + begin, sum + end, buffers_[k]->data() + begin);
  return barrier() ? ok_status() : failure();
}

Strategy::Strategy(uint32_t replicas, ProcessGroup* group)
    : replicas_(replicas),
      group_(group),
      all_reduce_(replicas, group),
      // Replicas spin for their next job where each has a core; the caller
      // spins for them to finish only where a core is left over for it.
      to_replicas_(SpinWait::cores_for(replicas * processes_here(group))),
      to_caller_(SpinWait::cores_for((replicas + 1) * processes_here(group))),
      results_(replicas) {
  for (uint32_t r = 0; r < replicas; ++r) threads_.emplace_back([this, r] { serve(r); });
}

Strategy::~Strategy() {
  stop_.store(true);
  to_replicas_.notify();
  for (std::thread& thread : threads_) thread.join();
}

void Strategy::serve(uint32_t replica) {
  uint64_t seen = 0;
  for (;;) {
    to_replicas_.wait([&] { return stop_.load() || job_number_.load() != seen; });
    if (stop_.load()) return;
    seen = job_number_.load();
    const auto& job = *job_;
    // An exception would otherwise end the process (std::terminate), the
    // other replicas waiting in an all-reduce.
    Status status;
    try {
      if (meeting_) meeting_(replica);
      status = job(replica);
    } catch (...) {
      status = current_exception_status("replica " + std::to_string(replica));
    }
    if (!status.ok()) all_reduce_.abort();
    results_[replica] = std::move(status);
    // The caller reads the results once every replica has counted itself.
    if (finished_.fetch_add(1) + 1 == replicas_) to_caller_.notify();
  }
}

Status Strategy::run(const std::function<Status(uint32_t replica)>& fn) {
  all_reduce_.reset();
  job_ = &fn;
  finished_.store(0);
  job_number_.fetch_add(1);  // publishes the job to the replicas
  to_replicas_.notify();
  to_caller_.wait([&] { return finished_.load() == replicas_; });
  job_ = nullptr;
  // Report the root cause, not the aborts it caused in the others.
  for (const Status& status : results_)
    if (!status.ok() && status.code() != StatusCode::kUnavailable) return status;
  for (const Status& status : results_)
    if (!status.ok()) return status;
  return ok_status();
}

Result<double> Strategy::reduce(ReduceOp op, const std::vector<double>& local) const {
  std::vector<std::vector<double>> per_replica;
  for (double value : local) per_replica.push_back({value});
  auto reduced = reduce(op, per_replica);
  if (!reduced.ok()) return reduced.status();
  return reduced->empty() ? 0.0 : reduced->front();
}

Result<std::vector<double>> Strategy::reduce(ReduceOp op,
                                             const std::vector<std::vector<double>>& per_replica) const {
  const std::size_t quantities = per_replica.empty() ? 0 : per_replica.front().size();
  // Replica-major; gathered in rank order, that is global replica order.
  std::vector<double> all;
  for (const std::vector<double>& values : per_replica) all.insert(all.end(), values.begin(), values.end());
  if (processes() > 1) {
    auto gathered = group_->all_gather(all);
    if (!gathered.ok()) return gathered.status();
    all = std::move(gathered).value();
  }
  const std::size_t replicas = quantities ? all.size() / quantities : 0;
  std::vector<double> totals(quantities, 0.0);
  for (std::size_t r = 0; r < replicas; ++r)
    for (std::size_t q = 0; q < quantities; ++q) totals[q] += all[r * quantities + q];
  if (op == ReduceOp::kMean && replicas)
    for (double& total : totals) total /= double(replicas);
  return totals;
}

}  // namespace systole
