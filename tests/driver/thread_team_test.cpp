// SPDX-License-Identifier: Apache-2.0
// ThreadTeam (label unit): every item of a shared loop runs once, on the
// member the schedule gives it; the barrier orders writes; teams of any
// size, more members than cores included, run back to back on one team.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <random>
#include <thread>
#include <vector>

#include "systole/thread_team.h"

namespace systole {
namespace {

TEST(ThreadTeam, EachItemOfEachLoopRunsOnceAndTheBarrierOrdersWrites) {
  const uint32_t seed = 11;
  std::printf("seed %u, %u cores\n", seed, std::thread::hardware_concurrency());
  std::mt19937 rng(seed);
  ThreadTeam team;
  for (int run = 0; run < 300; ++run) {
    const uint32_t members = 1 + rng() % 5;  // up to 5, past this machine's cores
    const uint32_t count = rng() % 300;      // 0 too
    std::vector<std::atomic<uint32_t>> static_hits(count);
    // Three dynamic loops: the third reuses the first's counter.
    std::vector<std::atomic<uint32_t>> dynamic_hits[3] = {std::vector<std::atomic<uint32_t>>(count),
                                                          std::vector<std::atomic<uint32_t>>(count),
                                                          std::vector<std::atomic<uint32_t>>(count)};
    std::vector<uint32_t> owner(count, ~0u);
    std::vector<uint32_t> member_of_index(members, ~0u);
    std::atomic<uint32_t> entered{0};
    std::vector<uint64_t> sums(members, 0);
    team.run(members, [&](const Crew& crew) {
      ASSERT_EQ(crew.members(), members);
      member_of_index[crew.member()] = crew.member();
      entered.fetch_add(1);
      crew.share_static(count, [&](uint32_t i) {
        static_hits[i].fetch_add(1);
        owner[i] = crew.member();
      });
      // After share_static's barrier every member sees every owner.
      uint64_t sum = 0;
      for (uint32_t i = 0; i < count; ++i) sum += owner[i];
      sums[crew.member()] = sum;
      for (auto& hits : dynamic_hits) crew.share_dynamic(count, [&](uint32_t i) { hits[i].fetch_add(1); });
    });
    ASSERT_EQ(entered.load(), members) << "run " << run;
    for (uint32_t m = 0; m < members; ++m) ASSERT_EQ(member_of_index[m], m) << "run " << run;
    uint64_t expected_sum = 0;
    for (uint32_t i = 0; i < count; ++i) {
      ASSERT_EQ(static_hits[i].load(), 1u) << "run " << run << ", item " << i;
      for (int loop = 0; loop < 3; ++loop)
        ASSERT_EQ(dynamic_hits[loop][i].load(), 1u) << "run " << run << ", loop " << loop << ", item " << i;
      // share_static's schedule: member m takes [count m / M, count (m + 1) / M).
      uint32_t expected = 0;
      while (uint64_t(count) * (expected + 1) / members <= i) ++expected;
      ASSERT_EQ(owner[i], expected) << "run " << run << ", item " << i;
      expected_sum += owner[i];
    }
    for (uint32_t m = 0; m < members; ++m)
      ASSERT_EQ(sums[m], expected_sum) << "run " << run << ", member " << m;
  }
}

TEST(ThreadTeam, EachThreadHasATeamOfItsOwn) {
  ThreadTeam* main_team = &ThreadTeam::of_this_thread();
  EXPECT_EQ(&ThreadTeam::of_this_thread(), main_team);
  ThreadTeam* other = nullptr;
  std::thread([&] {
    other = &ThreadTeam::of_this_thread();
    // A team used and then dropped with its thread: its workers stop.
    std::atomic<uint32_t> ran{0};
    other->run(3, [&](const Crew&) { ran.fetch_add(1); });
    EXPECT_EQ(ran.load(), 3u);
  }).join();
  EXPECT_NE(other, main_team);
}

}  // namespace
}  // namespace systole
