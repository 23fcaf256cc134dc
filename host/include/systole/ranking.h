// SPDX-License-Identifier: Apache-2.0
// Ranking metrics of a recommender, for a model and for the popularity
// baseline alike: ROC AUC over labelled pairs, and recall@k over held-out
// interactions.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace systole {

// The area under the ROC curve of `scores` against 0/1 `labels`: the chance
// that a random positive outscores a random negative, ties counting half
// (the Mann-Whitney statistic). NaN when either class is absent.
double roc_auc(const std::vector<float>& scores, const std::vector<float>& labels);

// (user, item) pairs, as ids (hash buckets).
struct Interactions {
  std::vector<uint32_t> users, items;
  std::size_t size() const { return users.size(); }
};

// recall@k: for each of `users`, every candidate item is scored and ranked
// (higher score first, the lower item id on a tie), the items the user has
// in `train` are removed, and the user's recall is the share of its
// `held_out` items in the top k; the result is the mean over `users` (those
// with held-out items). `score(u, scores)` fills one score per candidate
// for users[u].
double recall_at_k(const std::vector<uint32_t>& users, const std::vector<uint32_t>& candidates,
                   const Interactions& train, const Interactions& held_out, uint32_t k,
                   const std::function<void(std::size_t u, std::vector<float>& scores)>& score);

}  // namespace systole
