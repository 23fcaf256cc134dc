// SPDX-License-Identifier: Apache-2.0
// Exhaustive tests: a check run over a whole input space on every core.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace systole::testing {

// Runs body(i) for i in [0, count) on all cores; returns the first i for
// which it returned false, or count.
template <class Body>
uint64_t first_failure(uint64_t count, Body body) {
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::atomic<uint64_t> first{count};
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      const uint64_t begin = count * t / threads, end = count * (t + 1) / threads;
      for (uint64_t i = begin; i < end && i < first.load(std::memory_order_relaxed); ++i) {
        if (!body(i)) {
          uint64_t seen = first.load();
          while (i < seen && !first.compare_exchange_weak(seen, i)) {
          }
          return;
        }
      }
    });
  }
  for (auto& thread : pool) thread.join();
  return first.load();
}

}  // namespace systole::testing
