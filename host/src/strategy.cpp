// Ring all-reduce among threads and the replica runner.
#include "systole/strategy.h"

#include <thread>

namespace systole {

RingAllReduce::RingAllReduce(uint32_t participants)
    : participants_(participants), buffers_(participants, nullptr) {}

bool RingAllReduce::barrier() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (aborted_) return false;
  const uint64_t generation = generation_;
  if (++arrived_ == participants_) {
    arrived_ = 0;
    ++generation_;
    changed_.notify_all();
    return true;
  }
  changed_.wait(lock, [&] { return generation_ != generation || aborted_; });
  return !aborted_;
}

void RingAllReduce::abort() {
  std::lock_guard<std::mutex> lock(mutex_);
  aborted_ = true;
  changed_.notify_all();
}

void RingAllReduce::reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  aborted_ = false;
  arrived_ = 0;
}

Status RingAllReduce::sum(uint32_t me, std::vector<float>& values) {
  const uint32_t n = participants_;
  const Status aborted(StatusCode::kUnavailable, "all-reduce aborted: another replica failed");
  if (n == 1) return ok_status();
  buffers_[me] = &values;
  if (!barrier()) return aborted;
  const std::size_t count = values.size();
  for (uint32_t p = 0; p < n; ++p)
    if (buffers_[p]->size() != count) {
      abort();
      return Status(StatusCode::kInvalidArgument, "all-reduce: replicas passed different lengths");
    }
  auto chunk_begin = [&](uint32_t c) { return count * c / n; };
  const std::vector<float>& left = *buffers_[(me + n - 1) % n];

  // Reduce-scatter: at step s, take chunk (me - 1 - s) from the left
  // neighbour's partial sum and add this replica's own values to it.
  for (uint32_t step = 0; step + 1 < n; ++step) {
    const uint32_t c = (me + 2 * n - 1 - step) % n;
    for (std::size_t i = chunk_begin(c); i < chunk_begin(c + 1); ++i) values[i] = left[i] + values[i];
    if (!barrier()) return aborted;
  }
  // This replica now holds the full sum of chunk (me + 1). All-gather: at
  // step s, copy chunk (me - s) from the left neighbour.
  for (uint32_t step = 0; step + 1 < n; ++step) {
    const uint32_t c = (me + n - step) % n;
    for (std::size_t i = chunk_begin(c); i < chunk_begin(c + 1); ++i) values[i] = left[i];
    if (!barrier()) return aborted;
  }
  return ok_status();
}

Strategy::Strategy(uint32_t replicas) : replicas_(replicas), all_reduce_(replicas) {}

Status Strategy::run(const std::function<Status(uint32_t replica)>& fn) {
  all_reduce_.reset();
  std::vector<Status> results(replicas_);
  std::vector<std::thread> threads;
  for (uint32_t r = 0; r < replicas_; ++r)
    threads.emplace_back([&, r] {
      results[r] = fn(r);
      if (!results[r].ok()) all_reduce_.abort();
    });
  for (std::thread& thread : threads) thread.join();
  // Report the root cause, not the aborts it caused in the others.
  for (const Status& status : results)
    if (!status.ok() && status.code() != StatusCode::kUnavailable) return status;
  for (const Status& status : results)
    if (!status.ok()) return status;
  return ok_status();
}

double Strategy::reduce(ReduceOp op, const std::vector<double>& per_replica) {
  double total = 0;
  for (double value : per_replica) total += value;
  return op == ReduceOp::kMean && !per_replica.empty() ? total / double(per_replica.size()) : total;
}

}  // namespace systole
