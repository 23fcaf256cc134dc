// SPDX-License-Identifier: Apache-2.0
// The threads of one product or conversion: the calling thread and workers
// of its own, meeting through SpinWait.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "systole/spin_wait.h"

namespace systole {

class ThreadTeam;

// A member's view of the team inside ThreadTeam::run: which member it is,
// the team's barrier, and loops shared among the members, each ending at
// the barrier. A team of one runs its loops plainly.
class Crew {
 public:
  uint32_t member() const { return member_; }
  uint32_t members() const { return members_; }

  // Returns when every member has called it.
  void barrier() const;

  // body(i) for i in [0, count), member m taking the m-th of `members`
  // contiguous ranges; then the barrier.
  template <class Body>
  void share_static(uint32_t count, const Body& body) const {
    const uint32_t first = uint32_t(uint64_t(count) * member_ / members_);
    const uint32_t end = uint32_t(uint64_t(count) * (member_ + 1) / members_);
    for (uint32_t i = first; i < end; ++i) body(i);
    if (members_ > 1) barrier();
  }

  // body(i) for i in [0, count), each i to whichever member asks next (for
  // items of uneven cost); then the barrier.
  template <class Body>
  void share_dynamic(uint32_t count, const Body& body) const {
    if (members_ == 1) {
      for (uint32_t i = 0; i < count; ++i) body(i);
      return;
    }
    std::atomic<uint32_t>& next = next_index();
    for (uint32_t i = next.fetch_add(1); i < count; i = next.fetch_add(1)) body(i);
    end_dynamic();
  }

 private:
  friend class ThreadTeam;
  Crew(ThreadTeam* team, uint32_t member, uint32_t members)
      : team_(team), member_(member), members_(members) {}
  std::atomic<uint32_t>& next_index() const;
  void end_dynamic() const;

  ThreadTeam* team_;
  uint32_t member_, members_;
  mutable uint32_t dynamic_loops_ = 0;  // this member's count of share_dynamic calls in this run
};

// The calling thread's team of worker threads for data-parallel loops, in
// place of an OpenMP parallel region: workers that find no work spin for
// SpinWait::kSpin, then sleep (libgomp's passive policy made every region
// pay a 46 us wake-up on a 2-core VM, its active one keeps idle cores busy
// for others' work). Which member computes an item never changes a result:
// the loops' items are independent.
class ThreadTeam {
 public:
  // The calling thread's team; its workers start when first needed and
  // stop when the thread ends.
  static ThreadTeam& of_this_thread();

  ThreadTeam();
  ~ThreadTeam();
  ThreadTeam(const ThreadTeam&) = delete;
  ThreadTeam& operator=(const ThreadTeam&) = delete;

  // Runs body(crew) on `members` threads (at least 1), the caller as member
  // 0, and returns when every member has returned. An exception escaping
  // body on a team of several ends the process (std::terminate), as one
  // escaping an OpenMP region does: the other members may still be using
  // what it would unwind.
  template <class Body>
  void run(uint32_t members, const Body& body) {
    if (members <= 1) {
      body(Crew(this, 0, 1));
      return;
    }
    run_erased(
        members,
        [](const void* erased, const Crew& crew) noexcept { (*static_cast<const Body*>(erased))(crew); },
        &body);
  }

 private:
  friend class Crew;
  using Call = void (*)(const void* body, const Crew& crew) noexcept;
  struct Worker;

  // What a team of one size meets at: the members' barrier, and the
  // caller's wait for the workers to finish.
  struct Size {
    explicit Size(uint32_t members)
        : barrier(members, SpinWait::cores_for(members)), done(SpinWait::cores_for(members)) {}
    SpinBarrier barrier;
    SpinWait done;
  };

  void run_erased(uint32_t members, Call call, const void* body);
  void serve(Worker& worker, uint32_t member);

  std::vector<std::unique_ptr<Worker>> workers_;  // worker i is member i + 1
  std::vector<std::unique_ptr<Size>> sizes_;      // by members - 2, made when first needed
  // The job: read by its members once their Worker::job moves, and
  // written again only after they have all finished.
  Call call_ = nullptr;
  const void* body_ = nullptr;
  uint32_t members_ = 1;
  Size* size_ = nullptr;
  std::atomic<uint32_t> next_[2] = {0, 0};  // share_dynamic's counters, alternating
  std::atomic<uint32_t> finished_{0};       // workers done with the job
};

}  // namespace systole
