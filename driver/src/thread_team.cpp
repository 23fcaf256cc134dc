// SPDX-License-Identifier: Apache-2.0
// The calling thread's team of workers (thread_team.h).
#include "systole/thread_team.h"

namespace systole {

struct ThreadTeam::Worker {
  explicit Worker(bool spin) : wake(spin) {}
  std::atomic<uint64_t> job{0};  // moves once for each job this worker is in
  std::atomic<bool> stop{false};
  SpinWait wake;
  std::thread thread;
};

void Crew::barrier() const { team_->size_->barrier.arrive_and_wait(); }

std::atomic<uint32_t>& Crew::next_index() const { return team_->next_[dynamic_loops_ % 2]; }

void Crew::end_dynamic() const {
  // The other counter was last used by the loop before this one, which
  // every member has left (it ended at the barrier): ready it for the
  // next loop before this one's barrier.
  if (member_ == 0) team_->next_[(dynamic_loops_ + 1) % 2].store(0);
  ++dynamic_loops_;
  barrier();
}

ThreadTeam& ThreadTeam::of_this_thread() {
  thread_local ThreadTeam team;
  return team;
}

ThreadTeam::ThreadTeam() = default;

ThreadTeam::~ThreadTeam() {
  for (const std::unique_ptr<Worker>& worker : workers_) {
    worker->stop.store(true);
    worker->wake.notify();
    worker->thread.join();
  }
}

void ThreadTeam::run_erased(uint32_t members, Call call, const void* body) {
  while (workers_.size() + 1 < members) {
    const uint32_t member = uint32_t(workers_.size()) + 1;
    // A worker spins for its next job only where the team up to it has a
    // core each.
    workers_.push_back(std::make_unique<Worker>(SpinWait::cores_for(member + 1)));
    Worker& worker = *workers_.back();
    worker.thread = std::thread([this, &worker, member] { serve(worker, member); });
  }
  while (sizes_.size() + 1 < members) sizes_.push_back(std::make_unique<Size>(uint32_t(sizes_.size()) + 2));
  Size& size = *sizes_[members - 2];
  call_ = call;
  body_ = body;
  members_ = members;
  size_ = &size;
  next_[0].store(0);
  next_[1].store(0);
  finished_.store(0);
  for (uint32_t i = 0; i + 1 < members; ++i) {
    workers_[i]->job.fetch_add(1);  // publishes the job to this worker
    workers_[i]->wake.notify();
  }
  call(body, Crew(this, 0, members));
  size.done.wait([&] { return finished_.load() == members - 1; });
}

void ThreadTeam::serve(Worker& worker, uint32_t member) {
  uint64_t seen = 0;
  for (;;) {
    worker.wake.wait([&] { return worker.job.load() != seen || worker.stop.load(); });
    if (worker.stop.load()) return;
    seen = worker.job.load();
    // The job's fields stay as they are until this worker has counted
    // itself finished; read what is needed after that first.
    const uint32_t members = members_;
    Size* const size = size_;
    call_(body_, Crew(this, member, members));
    if (finished_.fetch_add(1) + 1 == members - 1) size->done.notify();
  }
}

}  // namespace systole
