// SPDX-License-Identifier: Apache-2.0
// The ranking report: the training positives from the training files, the
// towers' vectors from the model, recall@k and AUC from systole/ranking.h.
#include "systole/run/ranking.h"

#include <algorithm>
#include <random>
#include <unordered_map>

#include "systole/dot_score.h"
#include "systole/ranking.h"
#include "systole/record_pipeline.h"
#include "systole/tfrecord.h"

namespace systole {
namespace {

// The positive (label 1) pairs of a data set of [user, item] examples.
Interactions positives(const Dataset& data) {
  Interactions pairs;
  for (uint32_t e = 0; e < data.examples; ++e)
    if (data.labels[e] == 1) {
      pairs.users.push_back(uint32_t(data.values[2 * std::size_t(e)]));
      pairs.items.push_back(uint32_t(data.values[2 * std::size_t(e) + 1]));
    }
  return pairs;
}

std::vector<uint32_t> distinct(std::vector<uint32_t> ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

}  // namespace

Result<RankingReport> rank_test_set(Trainer& trainer, const RunConfig& config, const Dataset& test) {
  const ModelSpec& spec = trainer.model().spec();
  if (spec.layers.empty() || spec.layers.back().type != "dot" || test.features != 2)
    return Status(StatusCode::kInvalidArgument,
                  "ranking: needs a two-tower model (inputs [user, item], the last layer a dot)");
  auto schema = example_schema(config);
  if (!schema.ok()) return schema.status();
  auto files = match_files(config.train_files);
  if (!files.ok()) return files.status();
  auto compression = data_compression(config);
  if (!compression.ok()) return compression.status();
  auto train_set = load_tfrecord_dataset(*files, *schema, example_columns(config), *compression);
  if (!train_set.ok()) return train_set.status();
  const Interactions train = positives(*train_set), held_out = positives(test);
  std::unordered_map<uint32_t, float> popularity;  // training positives per item
  for (uint32_t item : train.items) popularity[item] += 1.0f;

  std::vector<uint32_t> users = distinct(held_out.users);
  const std::size_t all_users = users.size();
  if (users.size() > config.ranking_users) {
    std::mt19937_64 rng(config.seed);
    std::shuffle(users.begin(), users.end(), rng);
    users.resize(config.ranking_users);
    std::sort(users.begin(), users.end());
  }
  std::vector<uint32_t> items = train.items;
  items.insert(items.end(), held_out.items.begin(), held_out.items.end());
  const std::vector<uint32_t> candidates = distinct(std::move(items));
  if (users.empty() || candidates.empty())
    return Status(StatusCode::kInvalidArgument, "ranking: the test set has no positive pairs");

  // The towers' vectors: pairs (user k, candidate k) through every layer
  // but the dot give both at once.
  const std::size_t n = std::max(users.size(), candidates.size());
  std::vector<float> pairs(2 * n);
  for (std::size_t k = 0; k < n; ++k) {
    pairs[2 * k] = float(users[k % users.size()]);
    pairs[2 * k + 1] = float(candidates[k % candidates.size()]);
  }
  auto towers = trainer.predict(pairs.data(), uint32_t(n), spec.layers.size() - 1);
  if (!towers.ok()) return towers.status();
  const std::size_t width = towers->size() / (2 * n);
  auto score_pair = dot_score(spec.layers.back(), uint32_t(width));
  if (!score_pair.ok()) return score_pair.status();
  const DotScore score = *score_pair;
  auto user_vector = [&](std::size_t u) { return towers->data() + 2 * u * width; };
  auto item_vector = [&](std::size_t c) { return towers->data() + (2 * c + 1) * width; };
  const double model_recall = recall_at_k(users, candidates, train, held_out, config.ranking_k,
                                          [&](std::size_t u, std::vector<float>& scores) {
                                            const float* x = user_vector(u);
                                            for (std::size_t c = 0; c < candidates.size(); ++c)
                                              scores[c] = score(x, item_vector(c));
                                          });
  std::vector<float> candidate_popularity(candidates.size());
  for (std::size_t c = 0; c < candidates.size(); ++c) candidate_popularity[c] = popularity[candidates[c]];
  const double popular_recall =
      recall_at_k(users, candidates, train, held_out, config.ranking_k,
                  [&](std::size_t, std::vector<float>& scores) { scores = candidate_popularity; });

  auto logits = trainer.predict(test.values.data(), test.examples);
  if (!logits.ok()) return logits.status();
  std::vector<float> model_scores(test.examples), popular_scores(test.examples);
  for (uint32_t e = 0; e < test.examples; ++e) {
    model_scores[e] = (*logits)[2 * std::size_t(e) + 1] - (*logits)[2 * std::size_t(e)];
    popular_scores[e] = popularity[uint32_t(test.values[2 * std::size_t(e) + 1])];
  }
  RankingReport report;
  report.users = users.size();
  report.all_users = all_users;
  report.candidates = candidates.size();
  report.pairs = test.examples;
  report.k = config.ranking_k;
  report.model_auc = roc_auc(model_scores, test.labels);
  report.model_recall = model_recall;
  report.popularity_auc = roc_auc(popular_scores, test.labels);
  report.popularity_recall = popular_recall;
  return report;
}

}  // namespace systole
