// SPDX-License-Identifier: Apache-2.0
// Waiting for other threads of a step: a short spin, then sleep.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace systole {

// Where threads wait for a condition on atomics that other threads make
// true. A waiter that may spin checks the condition for up to kSpin before
// it sleeps: the replicas of a step reach their meeting points within
// microseconds of each other, while a sleeper's wake-up costs tens of
// microseconds (a futex call on each side, more in a virtual machine). Spin
// only where every waiting thread has a core of its own; otherwise spinning
// takes the core a peer needs to arrive. notify() wakes sleepers, and only
// takes the lock when there are any.
class SpinWait {
 public:
  static constexpr std::chrono::microseconds kSpin{50};

  explicit SpinWait(bool spin = false) : spin_(spin) {}
  SpinWait(const SpinWait&) = delete;
  SpinWait& operator=(const SpinWait&) = delete;

  void set_spin(bool spin) { spin_ = spin; }

  // Returns once ready() (which reads atomics) is true.
  template <class Ready>
  void wait(const Ready& ready) {
    if (ready()) return;
    if (spin_) {
      const auto until = std::chrono::steady_clock::now() + kSpin;
      for (uint32_t polls = 1;; ++polls) {
        pause();
        if (ready()) return;
        if (polls % 64 == 0 && std::chrono::steady_clock::now() >= until) break;
      }
    }
    // The count is raised before the condition is read under the lock, and
    // notify() reads it after the change (both sequentially consistent): a
    // waiter either sees the change or is seen, and then waits on the
    // condition variable before notify() can take the lock.
    sleepers_.fetch_add(1);
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, ready);
    }
    sleepers_.fetch_sub(1);
  }

  // Called after a change (a sequentially consistent store or
  // read-modify-write) that may make a waiter's condition true.
  void notify() {
    if (sleepers_.load() == 0) return;
    { std::lock_guard<std::mutex> lock(mutex_); }
    changed_.notify_all();
  }

 private:
  static void pause() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
  }

  bool spin_;
  std::atomic<uint32_t> sleepers_{0};
  std::mutex mutex_;
  std::condition_variable changed_;
};

}  // namespace systole
