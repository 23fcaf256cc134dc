// Ring all-reduce among threads and the replica runner.
#include "systole/strategy.h"

#include <algorithm>

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
  // Distinct vectors: let the compiler vectorise the loops below.
  const float* __restrict left = buffers_[(me + n - 1) % n]->data();
  float* __restrict own = values.data();

  // Reduce-scatter: at step s, take chunk (me - 1 - s) from the left
  // neighbour's partial sum and add this replica's own values to it.
  for (uint32_t step = 0; step + 1 < n; ++step) {
    const uint32_t c = (me + 2 * n - 1 - step) % n;
    for (std::size_t i = chunk_begin(c); i < chunk_begin(c + 1); ++i) own[i] = left[i] + own[i];
    if (!barrier()) return aborted;
  }
  // This replica now holds the full sum of chunk (me + 1). All-gather: at
  // step s, copy chunk (me - s) from the left neighbour.
  for (uint32_t step = 0; step + 1 < n; ++step) {
    const uint32_t c = (me + n - step) % n;
    std::copy(left + chunk_begin(c), left + chunk_begin(c + 1), own + chunk_begin(c));
    if (!barrier()) return aborted;
  }
  return ok_status();
}

Strategy::Strategy(uint32_t replicas)
    : replicas_(replicas), all_reduce_(replicas), results_(replicas) {
  for (uint32_t r = 0; r < replicas; ++r) threads_.emplace_back([this, r] { serve(r); });
}

Strategy::~Strategy() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

void Strategy::serve(uint32_t replica) {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stop_ || job_number_ != seen; });
    if (stop_) return;
    seen = job_number_;
    const auto& job = *job_;
    lock.unlock();
    Status status = job(replica);
    if (!status.ok()) all_reduce_.abort();
    lock.lock();
    results_[replica] = std::move(status);
    if (++finished_ == replicas_) changed_.notify_all();
  }
}

Status Strategy::run(const std::function<Status(uint32_t replica)>& fn) {
  all_reduce_.reset();
  std::unique_lock<std::mutex> lock(mutex_);
  job_ = &fn;
  finished_ = 0;
  ++job_number_;
  changed_.notify_all();
  changed_.wait(lock, [&] { return finished_ == replicas_; });
  job_ = nullptr;
  // Report the root cause, not the aborts it caused in the others.
  for (const Status& status : results_)
    if (!status.ok() && status.code() != StatusCode::kUnavailable) return status;
  for (const Status& status : results_)
    if (!status.ok()) return status;
  return ok_status();
}

double Strategy::reduce(ReduceOp op, const std::vector<double>& per_replica) {
  double total = 0;
  for (double value : per_replica) total += value;
  return op == ReduceOp::kMean && !per_replica.empty() ? total / double(per_replica.size()) : total;
}

}  // namespace systole
