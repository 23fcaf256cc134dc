// SPDX-License-Identifier: Apache-2.0
// ROC AUC and recall@k.
#include "systole/ranking.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

namespace systole {

double roc_auc(const std::vector<float>& scores, const std::vector<float>& labels) {
  std::vector<std::size_t> order(scores.size());
  std::iota(order.begin(), order.end(), std::size_t(0));
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return scores[a] < scores[b]; });
  // The positives' rank sum, tied scores sharing their mean rank.
  double rank_sum = 0, positives = 0;
  for (std::size_t first = 0; first < order.size();) {
    std::size_t last = first;
    while (last + 1 < order.size() && scores[order[last + 1]] == scores[order[first]]) ++last;
    const double mean_rank = 0.5 * double(first + last) + 1.0;
    for (std::size_t i = first; i <= last; ++i)
      if (labels[order[i]] > 0.5f) {
        rank_sum += mean_rank;
        ++positives;
      }
    first = last + 1;
  }
  const double negatives = double(scores.size()) - positives;
  if (positives == 0 || negatives == 0) return std::numeric_limits<double>::quiet_NaN();
  return (rank_sum - positives * (positives + 1) / 2) / (positives * negatives);
}

double recall_at_k(const std::vector<uint32_t>& users, const std::vector<uint32_t>& candidates,
                   const Interactions& train, const Interactions& held_out, uint32_t k,
                   const std::function<void(std::size_t u, std::vector<float>& scores)>& score) {
  std::unordered_map<uint32_t, std::unordered_set<uint32_t>> seen, wanted;
  for (std::size_t i = 0; i < train.size(); ++i) seen[train.users[i]].insert(train.items[i]);
  for (std::size_t i = 0; i < held_out.size(); ++i) wanted[held_out.users[i]].insert(held_out.items[i]);
  std::vector<float> scores;
  std::vector<std::size_t> order;
  double total = 0;
  std::size_t counted = 0;
  for (std::size_t u = 0; u < users.size(); ++u) {
    const auto held = wanted.find(users[u]);
    if (held == wanted.end()) continue;
    scores.assign(candidates.size(), 0.0f);
    score(u, scores);
    const auto& known = seen[users[u]];
    order.clear();
    for (std::size_t c = 0; c < candidates.size(); ++c)
      if (!known.count(candidates[c])) order.push_back(c);
    const std::size_t top = std::min<std::size_t>(k, order.size());
    std::partial_sort(order.begin(), order.begin() + std::ptrdiff_t(top), order.end(),
                      [&](std::size_t a, std::size_t b) {
                        return scores[a] != scores[b] ? scores[a] > scores[b] : candidates[a] < candidates[b];
                      });
    std::size_t hits = 0;
    for (std::size_t i = 0; i < top; ++i) hits += held->second.count(candidates[order[i]]);
    total += double(hits) / double(held->second.size());
    ++counted;
  }
  return counted ? total / double(counted) : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace systole
