// SPDX-License-Identifier: Apache-2.0
// The fast engine's choice of how many threads run a product: timed trials
// of one thread and of the whole team per size of product, then the faster.
#include <gtest/gtest.h>

#include "fast_gemm.h"

namespace systole::sw_emu {
namespace {

// Runs `sizer`'s trials for products of `macs`, timing one thread at
// `one_thread` seconds and the team at `team` seconds, until it decides.
void run_trials(TeamSizer& sizer, uint64_t macs, double one_thread, double team) {
  for (uint32_t i = 0; i < 2 * TeamSizer::kTrials; ++i) {
    const uint32_t threads = sizer.team(macs);
    sizer.record(macs, threads, threads == 1 ? one_thread : team);
  }
}

TEST(TeamSizer, SmallProductsAndTeamsOfOneStayOnOneThread) {
  TeamSizer pair(2);
  EXPECT_EQ(pair.team(TeamSizer::kMinMacs - 1), 1u);
  pair.record(TeamSizer::kMinMacs - 1, 2, 1e-9);  // not timed: changes nothing
  EXPECT_EQ(pair.team(TeamSizer::kMinMacs - 1), 1u);
  TeamSizer single(1);
  run_trials(single, uint64_t(1) << 30, 1.0, 0.1);
  EXPECT_EQ(single.team(uint64_t(1) << 30), 1u);
  EXPECT_EQ(TeamSizer(0).team(uint64_t(1) << 30), 1u);
}

TEST(TeamSizer, TriesBothTeamsAsOftenThenKeepsTheFaster) {
  TeamSizer sizer(4);
  const uint64_t macs = uint64_t(1) << 24;
  uint32_t tried[2] = {0, 0};
  for (uint32_t i = 0; i < 2 * TeamSizer::kTrials; ++i) {
    const uint32_t threads = sizer.team(macs);
    ASSERT_TRUE(threads == 1 || threads == 4) << threads;
    ++tried[threads == 1 ? 0 : 1];
    sizer.record(macs, threads, threads == 1 ? 1e-3 : 0.4e-3);
  }
  EXPECT_EQ(tried[0], TeamSizer::kTrials);
  EXPECT_EQ(tried[1], TeamSizer::kTrials);
  EXPECT_EQ(sizer.team(macs), 4u);
  EXPECT_EQ(sizer.team(macs + 1000), 4u);  // the same power of two

  // Where the team is slower (its operands fetched from another core's
  // cache), one thread.
  const uint64_t larger = uint64_t(1) << 26;
  run_trials(sizer, larger, 1e-3, 1.5e-3);
  EXPECT_EQ(sizer.team(larger), 1u);
  EXPECT_EQ(sizer.team(macs), 4u);  // each size decides for itself
}

TEST(TeamSizer, ComparesTimePerMultiplyAddAndKeepsTheBestTrial) {
  TeamSizer sizer(2);
  // Sizes within one class: the team's product is twice as large.
  const uint64_t small = uint64_t(1) << 22, large = small + small / 2;
  for (uint32_t i = 0; i < 2 * TeamSizer::kTrials; ++i) {
    const uint32_t threads = sizer.team(small);
    if (threads == 1)
      sizer.record(small, 1, 1e-3);  // 0.24 ns per multiply-add
    else
      sizer.record(large, 2, 1.2e-3);  // 0.19: faster per multiply-add
  }
  EXPECT_EQ(sizer.team(small), 2u);

  // One slow trial (the machine busy) does not outweigh the best.
  TeamSizer noisy(2);
  const uint64_t macs = uint64_t(1) << 23;
  for (uint32_t i = 0; i < 2 * TeamSizer::kTrials; ++i) {
    const uint32_t threads = noisy.team(macs);
    noisy.record(macs, threads, threads == 1 ? 1e-3 : (i < 2 ? 5e-3 : 0.6e-3));
  }
  EXPECT_EQ(noisy.team(macs), 2u);
}

}  // namespace
}  // namespace systole::sw_emu
