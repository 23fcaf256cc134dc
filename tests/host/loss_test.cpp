// SPDX-License-Identifier: Apache-2.0
// The losses and metrics against plain formulas and finite differences on
// awkward sizes, their errors, their sums adding up over batch splits, and
// the loss, metric and layer registries open to code outside the library.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "systole/loss.h"
#include "systole/model.h"
#include "systole/ranking.h"

namespace systole {
namespace {

constexpr uint32_t kSeed = 31;

Activations random_output(uint32_t batch, const Shape& shape, std::mt19937& rng, float spread = 3.0f) {
  std::normal_distribution<float> normal(0.0f, spread);
  Activations output;
  output.batch = batch;
  output.shape = shape;
  output.values.resize(std::size_t(batch) * shape_elements(shape));
  for (float& value : output.values) value = normal(rng);
  return output;
}

std::unique_ptr<Loss> loss_of(const std::string& type,
                              std::vector<std::pair<std::string, std::string>> fields = {}) {
  auto loss = make_loss({type, std::move(fields)});
  EXPECT_TRUE(loss.ok()) << loss.status().message();
  return std::move(loss).value();
}

std::unique_ptr<Metric> metric_of(const std::string& type,
                                  std::vector<std::pair<std::string, std::string>> fields = {}) {
  auto metric = make_metric({type, std::move(fields)});
  EXPECT_TRUE(metric.ok()) << metric.status().message();
  return std::move(metric).value();
}

// Central differences of compute(...) / divisor against the analytic
// gradient, at every output value.
void expect_gradient(const Loss& loss, Activations output, const std::vector<float>& labels, uint32_t width,
                     const std::string& what) {
  const float divisor = float(output.batch);
  std::vector<float> gradient;
  ASSERT_TRUE(loss.compute(output, labels.data(), width, divisor, &gradient).ok());
  ASSERT_EQ(gradient.size(), output.values.size());
  for (std::size_t i = 0; i < output.values.size(); ++i) {
    const float saved = output.values[i], h = 1e-2f;
    output.values[i] = saved + h;
    const double up = loss.compute(output, labels.data(), width, divisor, nullptr).value();
    output.values[i] = saved - h;
    const double down = loss.compute(output, labels.data(), width, divisor, nullptr).value();
    output.values[i] = saved;
    const double numeric = (up - down) / (2.0 * h) / divisor;
    EXPECT_NEAR(gradient[i], numeric, 2e-3 * std::max(1.0, std::fabs(numeric)))
        << what << ", seed " << kSeed << ", value " << i;
  }
}

TEST(Losses, SparseCategoricalCrossentropyIsMinusLogSoftmax) {
  std::mt19937 rng(kSeed);
  const Activations output = random_output(5, {7}, rng);
  std::vector<float> labels;
  for (uint32_t e = 0; e < 5; ++e) labels.push_back(float(rng() % 7));
  const auto loss = loss_of("sparse_categorical_crossentropy");
  double expected = 0;
  for (uint32_t e = 0; e < 5; ++e) {
    double total = 0;
    for (uint32_t c = 0; c < 7; ++c) total += std::exp(double(output.values[e * 7 + c]));
    expected += -std::log(std::exp(double(output.values[e * 7 + uint32_t(labels[e])])) / total);
  }
  EXPECT_NEAR(loss->compute(output, labels.data(), 1, 1.0f, nullptr).value(), expected, 1e-9);
  expect_gradient(*loss, output, labels, 1, "sparse categorical");

  labels[3] = 7;
  EXPECT_EQ(loss->compute(output, labels.data(), 1, 1.0f, nullptr).status().message(),
            "example 3: label 7 is not a class in [0, 7)");
  labels[3] = 2.5f;
  EXPECT_FALSE(loss->compute(output, labels.data(), 1, 1.0f, nullptr).ok());
}

// A sequence of 4 positions of 6 classes, 0 the padding token: padded
// positions add nothing, an example's loss is its mean over the others,
// and an example of padding only adds 0.
TEST(Losses, IgnoreClassMasksPaddedPositions) {
  std::mt19937 rng(kSeed + 1);
  const Activations output = random_output(3, {4, 6}, rng);
  const std::vector<float> labels = {3, 5, 0, 0,  //
                                     1, 2, 4, 2,  //
                                     0, 0, 0, 0};
  const auto masked = loss_of("sparse_categorical_crossentropy", {{"ignore_class", "0"}});
  ASSERT_TRUE(masked->check({4, 6}, 4).ok());
  double expected = 0;
  for (uint32_t e = 0; e < 2; ++e) {
    double example = 0;
    uint32_t counted = 0;
    for (uint32_t p = 0; p < 4; ++p) {
      const uint32_t label = uint32_t(labels[e * 4 + p]);
      if (label == 0) continue;
      const float* z = output.values.data() + (e * 4 + p) * 6;
      double total = 0;
      for (uint32_t c = 0; c < 6; ++c) total += std::exp(double(z[c]));
      example += std::log(total) - z[label];
      ++counted;
    }
    expected += example / counted;
  }
  EXPECT_NEAR(masked->compute(output, labels.data(), 4, 1.0f, nullptr).value(), expected, 1e-9);
  std::vector<float> gradient;
  ASSERT_TRUE(masked->compute(output, labels.data(), 4, 3.0f, &gradient).ok());
  for (std::size_t i = 2 * 6; i < 4 * 6; ++i)
    EXPECT_EQ(gradient[i], 0.0f) << "a padded position, value " << i;
  for (std::size_t i = 8 * 6; i < 12 * 6; ++i)
    EXPECT_EQ(gradient[i], 0.0f) << "a padded example, value " << i;
  expect_gradient(*masked, output, labels, 4, "masked sequence");

  EXPECT_EQ(masked->check({4, 6}, 3).message().rfind("a class per example takes an output of [classes]", 0),
            0u);
  EXPECT_EQ(make_loss({"sparse_categorical_crossentropy", {{"ignore_class", "-1"}}}).status().message(),
            "ignore_class: expected a number in [0, 16777216), got '-1'");
}

TEST(Losses, BinaryCrossentropyAndMeanSquaredErrorFollowTheirFormulas) {
  std::mt19937 rng(kSeed + 2);
  Activations output = random_output(6, {3}, rng);
  std::vector<float> labels;
  std::uniform_int_distribution<int> bit(0, 1);
  for (uint32_t i = 0; i < 18; ++i) labels.push_back(float(bit(rng)));
  const auto binary = loss_of("binary_crossentropy");
  const auto squared = loss_of("mean_squared_error");
  double cross = 0, square = 0;
  for (uint32_t e = 0; e < 6; ++e) {
    double example_cross = 0, example_square = 0;
    for (uint32_t i = 0; i < 3; ++i) {
      const double z = output.values[e * 3 + i], y = labels[e * 3 + i];
      const double p = 1.0 / (1.0 + std::exp(-z));
      example_cross += -(y * std::log(p) + (1 - y) * std::log(1 - p));
      example_square += (z - y) * (z - y);
    }
    cross += example_cross / 3;
    square += example_square / 3;
  }
  EXPECT_NEAR(binary->compute(output, labels.data(), 3, 1.0f, nullptr).value(), cross, 1e-9);
  EXPECT_NEAR(squared->compute(output, labels.data(), 3, 1.0f, nullptr).value(), square, 1e-9);
  expect_gradient(*binary, output, labels, 3, "binary");
  expect_gradient(*squared, output, labels, 3, "squared");

  // Logits far out stay finite (the stable form).
  output.values.assign(18, 100.0f);
  const double far = binary->compute(output, labels.data(), 3, 1.0f, nullptr).value();
  EXPECT_TRUE(std::isfinite(far));
  labels[4] = 1.5f;
  EXPECT_EQ(binary->compute(output, labels.data(), 3, 1.0f, nullptr).status().message(),
            "example 1: label 1.5 is not in [0, 1]");
  EXPECT_EQ(squared->check({3}, 2).message(), "an output of [3] takes 3 label(s) per example, got 2");
}

TEST(Metrics, TopKAccuracyRanksTheLabelTiesToTheLowerClass) {
  Activations output;
  output.batch = 4;
  output.shape = {5};
  output.values = {0, 9, 1, 1, 2,   // label 4: second
                   3, 3, 3, 0, 0,   // label 1: a tie, class 0 ranks first
                   1, 0, 0, 0, 0,   // label 0: first
                   0, 1, 2, 3, 4};  // label 0: last
  const std::vector<float> labels = {4, 1, 0, 0};
  const auto top1 = metric_of("accuracy");
  const auto top2 = metric_of("top_k_accuracy", {{"k", "2"}});
  EXPECT_EQ(top2->name(), "top_2_accuracy");
  std::vector<double> one(2), two(2);
  ASSERT_TRUE(top1->update(output, labels.data(), 1, one.data()).ok());
  ASSERT_TRUE(top2->update(output, labels.data(), 1, two.data()).ok());
  EXPECT_EQ(top1->result(one.data()), 0.25);
  EXPECT_EQ(top2->result(two.data()), 0.75);
  EXPECT_EQ(metric_of("top_k_accuracy", {{"k", "6"}})->check({5}, 1).message(),
            "k 6 is more than the 5 classes");
  EXPECT_EQ(make_metric({"top_k_accuracy", {{"kk", "2"}}}).status().message(),
            "kk: unknown field for top_k_accuracy");
}

// Keras' 200-threshold AUC is within a bucket's width of the exact
// rank-sum AUC, and its sums add up over any split of the batches.
TEST(Metrics, AucApproachesTheExactAreaAndAddsUpOverSplits) {
  std::mt19937 rng(kSeed + 3);
  const uint32_t n = 997;
  Activations output = random_output(n, {1}, rng, 1.0f);
  std::vector<float> labels(n), scores(n);
  for (uint32_t e = 0; e < n; ++e) {
    // Positives lean to higher logits.
    labels[e] = float(rng() % 2);
    output.values[e] += labels[e] ? 0.8f : 0.0f;
    scores[e] = output.values[e];
  }
  const auto auc = metric_of("auc");
  std::vector<double> whole(auc->sums(), 0.0), split(auc->sums(), 0.0);
  ASSERT_TRUE(auc->update(output, labels.data(), 1, whole.data()).ok());
  Activations first = output, second = output;
  first.batch = 400;
  first.values.resize(400);
  second.batch = n - 400;
  second.values.erase(second.values.begin(), second.values.begin() + 400);
  ASSERT_TRUE(auc->update(first, labels.data(), 1, split.data()).ok());
  ASSERT_TRUE(auc->update(second, labels.data() + 400, 1, split.data()).ok());
  EXPECT_EQ(whole, split);
  EXPECT_NEAR(auc->result(whole.data()), roc_auc(scores, labels), 5e-3) << "seed " << kSeed + 3;
  EXPECT_GT(auc->result(whole.data()), 0.6);

  const auto binary = metric_of("binary_accuracy");
  std::vector<double> hits(2, 0.0);
  ASSERT_TRUE(binary->update(output, labels.data(), 1, hits.data()).ok());
  double expected = 0;
  for (uint32_t e = 0; e < n; ++e) expected += (output.values[e] > 0) == (labels[e] > 0.5f);
  EXPECT_EQ(binary->result(hits.data()), expected / n);
}

TEST(Metrics, PerplexityIsTheExponentOfTheMeanCrossEntropy) {
  std::mt19937 rng(kSeed + 4);
  const Activations output = random_output(9, {11}, rng);
  std::vector<float> labels;
  for (uint32_t e = 0; e < 9; ++e) labels.push_back(float(rng() % 11));
  const double loss =
      loss_of("sparse_categorical_crossentropy")->compute(output, labels.data(), 1, 1.0f, nullptr).value();
  const auto perplexity = metric_of("perplexity");
  std::vector<double> sums(2, 0.0);
  ASSERT_TRUE(perplexity->update(output, labels.data(), 1, sums.data()).ok());
  EXPECT_NEAR(perplexity->result(sums.data()), std::exp(loss / 9), 1e-9);
}

// A loss, a metric and a layer from outside the library, by name.
class MeanAbsoluteError final : public Loss {
 public:
  Status check(const Shape& output, uint32_t width) const override {
    return shape_elements(output) == width
               ? ok_status()
               : Status(StatusCode::kInvalidArgument, "one label per output value");
  }
  Result<double> compute(const Activations& output, const float* labels, uint32_t width, float divisor,
                         std::vector<float>* gradient) const override {
    double sum = 0;
    if (gradient) gradient->assign(output.values.size(), 0.0f);
    for (std::size_t i = 0; i < output.values.size(); ++i) {
      const float difference = output.values[i] - labels[i];
      sum += std::fabs(difference) / width;
      if (gradient) (*gradient)[i] = float((difference > 0) - (difference < 0)) / (divisor * width);
    }
    return sum;
  }
};

class Negated final : public Layer {
 public:
  Result<Shape> build(const Shapes& inputs, const LayerSite&, ParameterStore&) override { return inputs[0]; }
  Status forward(LayerContext&, ParameterStore&, const Inputs& inputs, Activations& output) override {
    output = inputs[0];
    for (float& value : output.values) value = -value;
    return ok_status();
  }
  Status backward(LayerContext&, ParameterStore&, const Inputs&, const Activations&,
                  const Activations& gradient, const InputGradients& input_gradients) override {
    if (!input_gradients[0]) return ok_status();
    *input_gradients[0] = gradient;
    for (float& value : input_gradients[0]->values) value = -value;
    return ok_status();
  }
  std::string torch_code() const override { return "Negated()"; }
};

class Pair final : public Layer {
 public:
  uint32_t min_inputs() const override { return 2; }
  uint32_t max_inputs() const override { return 2; }
  Result<Shape> build(const Shapes& inputs, const LayerSite&, ParameterStore&) override { return inputs[0]; }
  Status forward(LayerContext&, ParameterStore&, const Inputs&, Activations&) override { return ok_status(); }
  Status backward(LayerContext&, ParameterStore&, const Inputs&, const Activations&, const Activations&,
                  const InputGradients&) override {
    return ok_status();
  }
  std::string torch_code() const override { return "Pair()"; }
};

TEST(Registries, LossesMetricsAndLayersComeFromOutside) {
  ASSERT_TRUE(register_loss("mean_absolute_error_test", [](LayerArgs&) -> Result<std::unique_ptr<Loss>> {
                return std::unique_ptr<Loss>(new MeanAbsoluteError());
              }).ok());
  EXPECT_EQ(register_loss("binary_crossentropy",
                          [](LayerArgs&) -> Result<std::unique_ptr<Loss>> {
                            return std::unique_ptr<Loss>(new MeanAbsoluteError());
                          })
                .message(),
            "loss 'binary_crossentropy' is already registered");
  const std::vector<float> labels = {1, -2};
  Activations output;
  output.batch = 1;
  output.shape = {2};
  output.values = {0.5f, 0.0f};
  EXPECT_EQ(loss_of("mean_absolute_error_test")->compute(output, labels.data(), 2, 1.0f, nullptr).value(),
            1.25);
  EXPECT_EQ(make_metric({"f1", {}})
                .status()
                .message()
                .rfind("type: unknown metric 'f1' (expected one of accuracy, top_k_accuracy, perplexity", 0),
            0u);

  ASSERT_TRUE(register_layer("negated_test", [](LayerArgs&) -> Result<std::unique_ptr<Layer>> {
                return std::unique_ptr<Layer>(new Negated());
              }).ok());
  ASSERT_TRUE(register_layer("pair_test", [](LayerArgs&) -> Result<std::unique_ptr<Layer>> {
                return std::unique_ptr<Layer>(new Pair());
              }).ok());
  ModelSpec spec;
  spec.input_shape = {4};
  spec.classes = 4;
  spec.layers = {{"negated_test", {}}};
  auto model = Model::build(spec, 1);
  ASSERT_TRUE(model.ok()) << model.status().message();
  EXPECT_EQ((*model)->torch_code(), "torch.nn.Sequential(Negated())");
  spec.layers = {{"negated_test", {{"scale", "2"}}}};
  EXPECT_EQ(Model::build(spec, 1).status().message(),
            "model.layers[0].scale: unknown field for negated_test");
  spec.layers = {{"pair_test", {}}};
  EXPECT_EQ(
      Model::build(spec, 1).status().message(),
      "model.layers[0] (pair_test).inputs: takes 2 input(s), got 1 (a list gives each layer one; name its "
      "inputs with inputs: [...])");
}

}  // namespace
}  // namespace systole
