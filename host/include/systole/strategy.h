// TPUStrategy-style synchronous data parallelism over array instances: one
// replica per compute unit, each driven from its own thread, gradients
// summed by a ring all-reduce with a fixed order.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "systole/status.h"

namespace systole {

// Sums equal-length float vectors held by `participants` threads: ring
// reduce-scatter, then ring all-gather, over chunks of 1/participants of the
// vector. Chunk c is summed in the fixed ring order c, c+1, ..., c-1 (mod
// N), the partial sum on the left of each addition, so every run gives the
// same bits and every participant ends with identical values.
class RingAllReduce {
 public:
  explicit RingAllReduce(uint32_t participants);

  // Called by every participant (0..N-1) with its own vector; returns when
  // all hold the sum. Fails for everyone if any participant aborts.
  Status sum(uint32_t participant, std::vector<float>& values);
  // Wakes every waiting participant with an error (a replica failed).
  void abort();
  void reset();  // clears an abort for the next step

 private:
  // All participants meet here; false if aborted.
  bool barrier();

  uint32_t participants_;
  std::vector<std::vector<float>*> buffers_;
  std::mutex mutex_;
  std::condition_variable changed_;
  uint32_t arrived_ = 0;
  uint64_t generation_ = 0;
  bool aborted_ = false;
};

enum class ReduceOp { kSum, kMean };

class Strategy {
 public:
  explicit Strategy(uint32_t replicas);
  ~Strategy();
  Strategy(const Strategy&) = delete;
  Strategy& operator=(const Strategy&) = delete;

  uint32_t num_replicas_in_sync() const { return replicas_; }

  // Runs fn(replica) on each replica's thread (they live as long as the
  // strategy) and waits for all. The first error wins; a failing replica
  // aborts the all-reduce so none hangs.
  Status run(const std::function<Status(uint32_t replica)>& fn);

  // Inside run(): the sum over replicas, in place, identical on all.
  Status all_reduce_sum(uint32_t replica, std::vector<float>& values) {
    return all_reduce_.sum(replica, values);
  }

  // Combines per-replica values in replica order.
  static double reduce(ReduceOp op, const std::vector<double>& per_replica);

 private:
  void serve(uint32_t replica);

  uint32_t replicas_;
  RingAllReduce all_reduce_;
  std::mutex mutex_;
  std::condition_variable changed_;
  const std::function<Status(uint32_t)>* job_ = nullptr;
  uint64_t job_number_ = 0;
  uint32_t finished_ = 0;
  bool stop_ = false;
  std::vector<Status> results_;
  std::vector<std::thread> threads_;
};

}  // namespace systole
