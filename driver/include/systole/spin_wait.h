// SPDX-License-Identifier: Apache-2.0
// Waiting for other threads: a short spin, then sleep. The replicas of a
// training step and the threads of one product wait for each other here.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace systole {

// Where threads wait for a condition on atomics that other threads make
// true. A waiter that may spin checks the condition for up to kSpin before
// it sleeps: threads that work in step reach their meeting points within
// microseconds of each other, while a sleeper's wake-up costs tens of
// microseconds (a futex call on each side; 46 us for a sleeping OpenMP
// worker on a 2-core VM). Spin only where every waiting thread has a core
// of its own; otherwise spinning takes the core a peer needs to arrive,
// and an idle team gives its cores back after kSpin. notify() wakes
// sleepers, and only takes the lock when there are any.
class SpinWait {
 public:
  static constexpr std::chrono::microseconds kSpin{50};

  explicit SpinWait(bool spin = false) : spin_(spin) {}
  SpinWait(const SpinWait&) = delete;
  SpinWait& operator=(const SpinWait&) = delete;

  // Whether `threads` waiting threads each have a core of this machine.
  static bool cores_for(uint32_t threads) {
    return threads <= std::max(1u, std::thread::hardware_concurrency());
  }

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

  const bool spin_;
  std::atomic<uint32_t> sleepers_{0};
  std::mutex mutex_;
  std::condition_variable changed_;
};

// A reusable barrier of `parties` threads over SpinWait (spinning as told),
// which can be aborted: every waiter, and every later arrival, then
// returns false until reset().
class SpinBarrier {
 public:
  SpinBarrier(uint32_t parties, bool spin) : parties_(parties), waiting_(spin) {}

  // Returns when all parties have arrived; the last to arrive runs last()
  // first, seeing everything the others wrote before they arrived. False
  // if aborted.
  template <class Last>
  bool arrive_and_wait(const Last& last) {
    if (aborted_.load()) return false;
    // The generation cannot move before this thread arrives.
    const uint64_t generation = generation_.load();
    if (arrived_.fetch_add(1) + 1 == parties_) {
      // Each arrival is a sequentially consistent read-modify-write, so
      // the last one sees every other's writes; the others read nothing
      // until the generation moves.
      last();
      arrived_.store(0);
      generation_.fetch_add(1);
      waiting_.notify();
      return true;
    }
    waiting_.wait([&] { return generation_.load() != generation || aborted_.load(); });
    return !aborted_.load();
  }
  bool arrive_and_wait() {
    return arrive_and_wait([] {});
  }

  // Wakes every waiter with false.
  void abort() {
    aborted_.store(true);
    waiting_.notify();
  }
  // Clears an abort; no thread may be at the barrier.
  void reset() {
    aborted_.store(false);
    arrived_.store(0);
  }

 private:
  const uint32_t parties_;
  std::atomic<uint32_t> arrived_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> aborted_{false};
  SpinWait waiting_;
};

}  // namespace systole
