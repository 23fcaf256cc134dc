// SPDX-License-Identifier: Apache-2.0
// The ranking report of a two-tower recommender (`ranking:` in the
// config): after training, the model and the popularity baseline ranked on
// the test set's interactions (accel_train prints it, systole.Model's
// evaluate returns it with the test logs).
#pragma once

#include <cstddef>
#include <cstdint>

#include "systole/dataset.h"
#include "systole/run/config.h"
#include "systole/status.h"
#include "systole/trainer.h"

namespace systole {

struct RankingReport {
  std::size_t users = 0;      // the test users ranked (at most ranking.users)
  std::size_t all_users = 0;  // the test set's users with a positive
  std::size_t candidates = 0;
  uint32_t pairs = 0;  // the test pairs the AUCs are over
  uint32_t k = 0;
  double model_auc = 0, model_recall = 0;
  double popularity_auc = 0, popularity_recall = 0;
};

// AUC over the test pairs (positives and their sampled negatives) and
// recall@k over the test positives of up to config.ranking_users users
// (sampled with the run's seed), every item seen in training or test a
// candidate, each user's training items excluded; for the model and for
// the popularity baseline (an item's score: its training positives).
// Requires inputs [user, item] and a model ending in `dot`.
Result<RankingReport> rank_test_set(Trainer& trainer, const RunConfig& config, const Dataset& test);

}  // namespace systole
