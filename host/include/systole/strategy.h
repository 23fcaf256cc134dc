// SPDX-License-Identifier: Apache-2.0
// TPUStrategy-style synchronous data parallelism over array instances: one
// replica per compute unit, each driven from its own thread, gradients
// summed by an all-reduce with a fixed order, within the process and, given
// a ProcessGroup, across the processes of a multi-process job.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

#include "systole/process_group.h"
#include "systole/spin_wait.h"
#include "systole/status.h"

namespace systole {

// Sums equal-length float vectors held by `participants` threads, and,
// given a ProcessGroup, by the threads of every process of the job. The
// order is fixed and does not depend on how replicas are spread over
// threads or processes: element i of the result is
//   (((+0 + g_0[i]) + g_1[i]) + g_2[i]) + ... + g_{N-1}[i]
// over the global replicas in order (process_group.h numbers them), in the
// vector engine's arithmetic (ordered_sum). So
// every run gives the same bits, every participant ends with identical
// values, and P processes of K replicas give the same sum as one process of
// P * K replicas.
//
// Within a process each participant sums its 1/N slice of the vector over
// all buffers and writes that slice of the sum into every buffer (it reads
// and writes its peers' memory directly): two barriers per call, no copy of
// the whole vector. Across processes participant 0 runs the group's
// ordered_sum into a buffer of its own while the others wait, and each
// copies the result.
class AllReduce {
 public:
  explicit AllReduce(uint32_t participants, ProcessGroup* group = nullptr);

  // Called by every participant (0..N-1) with its own vector; returns when
  // all hold the sum. Fails for everyone if any participant aborts.
  Status sum(uint32_t participant, std::vector<float>& values);
  // Returns when every participant of this process has called it (the
  // cards' own reduction waits here for every row). Fails for everyone if
  // any participant aborts.
  Status wait_for_all(uint32_t participant);
  // Called by every participant once this process's terms are ready: its
  // part of the job's chained sum (ProcessGroup::chained_sum, `piece`
  // elements per piece), into `total` (the same for every participant),
  // where each participant's `add` adds the terms it holds to the elements
  // it owns; for each piece the group asks for, all of them run in
  // parallel. Returns when `total` holds the job's sum. Needs a group.
  Status chained_sum(uint32_t participant, std::size_t count, std::size_t piece,
                     const ProcessGroup::AddTerms& add, float* total);
  // Wakes every waiting participant with an error (a replica failed).
  void abort();
  void reset();  // clears an abort for the next step

 private:
  // All participants meet here; the last to arrive runs `last` under the
  // lock before releasing the others. False if aborted.
  bool barrier(void (AllReduce::*last)() = nullptr);
  void prepare();  // collects the buffers once all have arrived
  bool across_processes() const { return group_ && group_->size() > 1; }
  Status failure() const;

  uint32_t participants_;
  ProcessGroup* group_;
  std::vector<std::vector<float>*> buffers_;
  std::vector<const float*> inputs_;
  std::vector<float> total_;
  bool lengths_differ_ = false;
  // chained_sum: the piece being added, and each participant's result.
  struct Piece {
    const float* previous = nullptr;
    std::size_t begin = 0, end = 0;
    float* total = nullptr;
    bool more = false;
  };
  Piece piece_;
  std::vector<Status> piece_statuses_;
  SpinBarrier barrier_;  // aborted when a participant fails
};

enum class ReduceOp { kSum, kMean };

class Strategy {
 public:
  // `replicas` in this process; `group` (may be null, must outlive the
  // strategy) joins them to the replicas of the job's other processes.
  explicit Strategy(uint32_t replicas, ProcessGroup* group = nullptr);
  ~Strategy();
  Strategy(const Strategy&) = delete;
  Strategy& operator=(const Strategy&) = delete;

  // Replicas in this process, and in the whole job (TensorFlow's
  // num_replicas_in_sync), and this process's first global replica.
  uint32_t local_replicas() const { return replicas_; }
  uint32_t num_replicas_in_sync() const { return replicas_ * processes(); }
  uint32_t first_replica() const { return group_ ? group_->rank() * replicas_ : 0; }
  uint32_t processes() const { return group_ ? group_->size() : 1; }
  ProcessGroup* group() const { return group_; }

  // Runs fn(replica) on each replica's thread (they live as long as the
  // strategy) and waits for all. The first error wins; a failing replica
  // aborts the all-reduce so none hangs.
  Status run(const std::function<Status(uint32_t replica)>& fn);

  // Inside run(): the sum over all replicas of the job, in place,
  // identical on all.
  Status all_reduce_sum(uint32_t replica, std::vector<float>& values) {
    return met(replica, all_reduce_.sum(replica, values));
  }
  // Inside run(), across processes: the job's sum where this process's
  // terms are added by the replicas' `add`s (each unit of a card summing
  // its share of their gradients), into `total`.
  Status chained_sum(uint32_t replica, std::size_t count, std::size_t piece,
                     const ProcessGroup::AddTerms& add, float* total) {
    return met(replica, all_reduce_.chained_sum(replica, count, piece, add, total));
  }
  // Inside run(): waits for this process's other replicas.
  Status barrier(uint32_t replica) { return met(replica, all_reduce_.wait_for_all(replica)); }

  // Called on each replica's thread wherever the replicas meet: as each
  // job of run() starts, and after each all-reduce, chained sum and
  // barrier. The trainer tells a modelled board's timing
  // (CardModel::meet_host_threads, on a modelled board). Set it before the first run().
  void set_meeting(std::function<void(uint32_t replica)> meeting) { meeting_ = std::move(meeting); }

  // Combines per-replica values of this process's replicas over the whole
  // job, in global replica order (TensorFlow's Strategy.reduce).
  Result<double> reduce(ReduceOp op, const std::vector<double>& local) const;
  // The same for several quantities in one exchange across processes:
  // per_replica[r][q] is quantity q of this process's replica r (the same
  // count for every replica); element q of the result is its job-wide
  // reduction.
  Result<std::vector<double>> reduce(ReduceOp op, const std::vector<std::vector<double>>& per_replica) const;

 private:
  void serve(uint32_t replica);
  Status met(uint32_t replica, Status status) {
    if (status.ok() && meeting_) meeting_(replica);
    return status;
  }

  uint32_t replicas_;
  ProcessGroup* group_;
  AllReduce all_reduce_;
  // run() publishes job_ by counting job_number_; each replica counts
  // itself in finished_ once its result is written.
  const std::function<Status(uint32_t)>* job_ = nullptr;
  std::atomic<uint64_t> job_number_{0};
  std::atomic<uint32_t> finished_{0};
  std::atomic<bool> stop_{false};
  SpinWait to_replicas_, to_caller_;
  std::vector<Status> results_;
  std::vector<std::thread> threads_;
  std::function<void(uint32_t)> meeting_;
};

}  // namespace systole
