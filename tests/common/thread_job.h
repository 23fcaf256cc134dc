// SPDX-License-Identifier: Apache-2.0
// A multi-process job in one test process: P "processes" are threads, each
// with a ProcessGroup member that chains the ordered sum as the MPI group
// does (rank p starts from rank p-1's partial sum, the last rank's sum goes
// to everyone) and gathers in rank order. Any number of calls, in the same
// order on every member.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

#include "systole/process_group.h"

namespace systole::testing {

class ThreadJob {
 public:
  explicit ThreadJob(uint32_t processes) : processes_(processes) {}

  class Member final : public ProcessGroup {
   public:
    Member(ThreadJob& job, uint32_t rank) : job_(job), rank_(rank) {}
    uint32_t rank() const override { return rank_; }
    uint32_t size() const override { return job_.processes_; }
    uint32_t processes_on_this_host() const override { return size(); }

    // Whole vectors (the pieces are the MPI group's business).
    Status chained_sum(std::size_t count, std::size_t, const AddTerms& add, float* total) override {
      std::unique_lock<std::mutex> lock(job_.mutex_);
      Round& round = job_.round(job_.sums_, sums_++);
      job_.changed_.wait(lock, [&] { return rank_ == 0 || round.ready[rank_ - 1]; });
      const float* previous = nullptr;
      if (rank_ > 0) {
        std::copy(round.values[rank_ - 1].begin(), round.values[rank_ - 1].end(), total);
        previous = total;
      }
      lock.unlock();  // the others go on while this rank adds its terms
      const Status added = add(previous, 0, count, total);
      lock.lock();
      if (!added.ok()) return added;
      round.values[rank_].assign(total, total + count);
      round.ready[rank_] = true;
      job_.changed_.notify_all();
      job_.changed_.wait(lock, [&] { return bool(round.ready.back()); });
      std::copy(round.values.back().begin(), round.values.back().end(), total);
      job_.finish(job_.sums_, sums_ - 1, round);
      return ok_status();
    }

    Result<std::vector<double>> all_gather(const std::vector<double>& local) override {
      std::unique_lock<std::mutex> lock(job_.mutex_);
      Round& round = job_.round(job_.gathers_, gathers_++);
      round.gathered[rank_] = local;
      round.ready[rank_] = true;
      job_.changed_.notify_all();
      job_.changed_.wait(lock, [&] {
        return std::all_of(round.ready.begin(), round.ready.end(), [](bool ready) { return ready; });
      });
      std::vector<double> all;
      for (const auto& part : round.gathered) all.insert(all.end(), part.begin(), part.end());
      job_.finish(job_.gathers_, gathers_ - 1, round);
      return all;
    }

    [[noreturn]] void abort(int) override { std::abort(); }

   private:
    ThreadJob& job_;
    uint32_t rank_;
    uint64_t sums_ = 0, gathers_ = 0;  // calls so far
  };

 private:
  // One call's values from every rank.
  struct Round {
    std::vector<std::vector<float>> values;
    std::vector<std::vector<double>> gathered;
    std::vector<bool> ready;
    uint32_t finished = 0;
  };

  Round& round(std::map<uint64_t, Round>& rounds, uint64_t call) {
    Round& r = rounds[call];
    if (r.ready.empty()) {
      r.values.resize(processes_);
      r.gathered.resize(processes_);
      r.ready.assign(processes_, false);
    }
    return r;
  }
  // The last rank out of a call forgets it.
  void finish(std::map<uint64_t, Round>& rounds, uint64_t call, Round& r) {
    if (++r.finished == processes_) rounds.erase(call);
  }

  const uint32_t processes_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<uint64_t, Round> sums_, gathers_;
};

}  // namespace systole::testing
