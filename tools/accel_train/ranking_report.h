// SPDX-License-Identifier: Apache-2.0
// accel_train's ranking report for a two-tower recommender (`ranking:` in
// the config): after training, the model and the popularity baseline are
// ranked on the test set's interactions.
#pragma once

#include "systole/dataset.h"
#include "systole/run/config.h"
#include "systole/status.h"
#include "systole/trainer.h"

namespace systole {

// AUC over the test pairs (positives and their sampled negatives) and
// recall@k over the test positives of up to config.ranking_users users
// (sampled with the run's seed), every item seen in training or test a
// candidate, each user's training items excluded; printed for the model
// and for the popularity baseline (an item's score: its training
// positives). Requires inputs [user, item] and a model ending in `dot`.
Status report_ranking(Trainer& trainer, const RunConfig& config, const Dataset& test);

}  // namespace systole
