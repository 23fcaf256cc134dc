// SPDX-License-Identifier: Apache-2.0
// The optimizers against their published update rules, written here as
// plainly as the papers and Keras' docs state them, over a few steps of
// random gradients on tensors of awkward sizes (to the bit); gradient
// clipping; the registry; restoring state; learning-rate schedules.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "systole/optimizer.h"

namespace systole {
namespace {

uint32_t bits(float value) {
  uint32_t word;
  std::memcpy(&word, &value, sizeof word);
  return word;
}

// Two dense tensors (7 and 3 x 5 values) and a buffer, which no optimizer
// may touch.
ParameterStore small_store(std::mt19937& rng) {
  ParameterStore store;
  store.declare("0.weight", {7}, Region::kTrainable);
  store.declare("0.running_mean", {4}, Region::kBuffer);
  store.declare("1.weight", {3, 5}, Region::kTrainable);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& value : store.trainable()) value = normal(rng);
  for (float& value : store.buffers()) value = normal(rng);
  return store;
}

void random_gradients(ParameterStore& store, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 0.5f);
  for (float& g : store.gradients()) g = normal(rng);
}

// A tensor's values and gradient in the reference, by entry.
struct Reference {
  std::vector<std::vector<float>> w, g;
};

Reference split(const ParameterStore& store, bool gradients) {
  Reference reference;
  for (std::size_t t = 0; t < store.entries().size(); ++t) {
    const ParameterStore::Entry& entry = store.entries()[t];
    if (entry.region != Region::kTrainable) continue;
    const float* w = store.trainable().data() + entry.offset;
    reference.w.emplace_back(w, w + entry.size);
    if (gradients) {
      const float* g = const_cast<ParameterStore&>(store).gradient(t);
      reference.g.emplace_back(g, g + entry.size);
    }
  }
  return reference;
}

// Runs `steps` steps of `config` on the store and of `rule` on a copy of
// its tensors, tensor by tensor, and compares the bits after each step.
// rule(t, tensor index, w, g, lr) updates one tensor at step t (from 1).
template <class Rule>
void expect_rule(const OptimizerConfig& config, uint32_t seed, Rule rule) {
  std::mt19937 rng(seed);
  ParameterStore store = small_store(rng);
  const std::vector<float> buffers = store.buffers();
  auto optimizer = make_optimizer(config, store);
  ASSERT_TRUE(optimizer.ok()) << optimizer.status().message();
  Reference reference = split(store, false);
  for (uint64_t t = 1; t <= 5; ++t) {
    random_gradients(store, rng);
    const Reference gradients = split(store, true);
    const float lr = (*optimizer)->learning_rate();
    (*optimizer)->apply(store);
    EXPECT_EQ((*optimizer)->steps(), t);
    for (std::size_t k = 0; k < reference.w.size(); ++k) rule(t, k, reference.w[k], gradients.g[k], lr);
    const Reference after = split(store, false);
    for (std::size_t k = 0; k < reference.w.size(); ++k)
      for (std::size_t i = 0; i < reference.w[k].size(); ++i)
        ASSERT_EQ(bits(after.w[k][i]), bits(reference.w[k][i]))
            << config.name << ", seed " << seed << ", step " << t << ", tensor " << k << ", value " << i;
  }
  EXPECT_EQ(store.buffers(), buffers);
}

TEST(Optimizers, SgdWithMomentumAndNesterovFollowKeras) {
  for (bool nesterov : {false, true}) {
    OptimizerConfig config;
    config.name = "sgd";
    config.learning_rate = 0.1f;
    config.momentum = 0.8f;
    config.nesterov = nesterov;
    std::vector<std::vector<float>> velocity(2);
    expect_rule(config, 11,
                [&](uint64_t, std::size_t k, std::vector<float>& w, const std::vector<float>& g, float lr) {
                  velocity[k].resize(w.size());
                  for (std::size_t i = 0; i < w.size(); ++i) {
                    velocity[k][i] = 0.8f * velocity[k][i] - lr * g[i];
                    w[i] += nesterov ? 0.8f * velocity[k][i] - lr * g[i] : velocity[k][i];
                  }
                });
  }
}

// Adam as Keras computes it: Kingma and Ba's update with both bias
// corrections folded into the step size (their section 2's "more efficient
// order"), alpha = lr sqrt(1 - b2^t) / (1 - b1^t). AdamW adds Loshchilov
// and Hutter's decoupled decay (w -= lr * decay * w) before it.
TEST(Optimizers, AdamAndAdamWFollowKeras) {
  for (const char* name : {"adam", "adamw"}) {
    OptimizerConfig config;
    config.name = name;
    config.learning_rate = 0.01f;
    config.beta1 = 0.85f;
    config.beta2 = 0.99f;
    const float decay = std::string(name) == "adamw" ? 0.004f : 0.0f;  // Keras' default
    std::vector<std::vector<float>> m(2), v(2);
    expect_rule(config, 12,
                [&](uint64_t t, std::size_t k, std::vector<float>& w, const std::vector<float>& g, float lr) {
                  m[k].resize(w.size());
                  v[k].resize(w.size());
                  const float alpha = float(double(lr) * std::sqrt(1.0 - std::pow(double(0.99f), double(t))) /
                                            (1.0 - std::pow(double(0.85f), double(t))));
                  for (std::size_t i = 0; i < w.size(); ++i) {
                    if (decay > 0) w[i] -= lr * decay * w[i];
                    m[k][i] = 0.85f * m[k][i] + (1.0f - 0.85f) * g[i];
                    v[k][i] = 0.99f * v[k][i] + (1.0f - 0.99f) * g[i] * g[i];
                    w[i] -= alpha * m[k][i] / (std::sqrt(v[k][i]) + 1e-7f);
                  }
                });
  }
}

TEST(Optimizers, AdagradFollowsKeras) {
  OptimizerConfig config;
  config.name = "adagrad";
  config.learning_rate = 0.05f;
  config.initial_accumulator = 0.2f;
  std::vector<std::vector<float>> sum(2);
  expect_rule(config, 13,
              [&](uint64_t, std::size_t k, std::vector<float>& w, const std::vector<float>& g, float lr) {
                sum[k].resize(w.size(), 0.2f);
                for (std::size_t i = 0; i < w.size(); ++i) {
                  sum[k][i] += g[i] * g[i];
                  w[i] -= lr * g[i] / (std::sqrt(sum[k][i]) + 1e-7f);
                }
              });
}

// LARS (You, Gitman and Ginsburg 2017, Algorithm 1 with momentum): each
// tensor's rate is scaled by eta |w| / (|g| + decay |w|).
TEST(Optimizers, LarsScalesEachLayerByItsTrustRatio) {
  for (bool nesterov : {false, true}) {
    OptimizerConfig config;
    config.name = "lars";
    config.learning_rate = 2.0f;
    config.momentum = 0.9f;
    config.nesterov = nesterov;
    config.weight_decay = 5e-4f;
    config.trust_coefficient = 0.002f;
    std::vector<std::vector<float>> velocity(2);
    expect_rule(config, 14,
                [&](uint64_t, std::size_t k, std::vector<float>& w, const std::vector<float>& g, float lr) {
                  velocity[k].resize(w.size());
                  double ww = 0, gg = 0;
                  for (std::size_t i = 0; i < w.size(); ++i) {
                    ww += double(w[i]) * w[i];
                    gg += double(g[i]) * g[i];
                  }
                  const double trust =
                      0.002f * std::sqrt(ww) / (std::sqrt(gg) + double(5e-4f) * std::sqrt(ww));
                  const float scaled = float(double(lr) * trust);
                  for (std::size_t i = 0; i < w.size(); ++i) {
                    const float step = scaled * (g[i] + 5e-4f * w[i]);
                    velocity[k][i] = 0.9f * velocity[k][i] + step;
                    w[i] -= nesterov ? 0.9f * velocity[k][i] + step : velocity[k][i];
                  }
                });
  }
}

double norm(const float* values, std::size_t size) {
  double sum = 0;
  for (std::size_t i = 0; i < size; ++i) sum += double(values[i]) * values[i];
  return std::sqrt(sum);
}

// clipnorm bounds each tensor's gradient norm and keeps its direction;
// global_clipnorm bounds the norm of all of them together. SGD without
// momentum at lr 1 from zero makes the clipped gradient visible as -update.
TEST(Optimizers, ClippingBoundsTheGradientNorms) {
  for (const char* mode : {"clipnorm", "global_clipnorm"}) {
    std::mt19937 rng(15);
    ParameterStore store = small_store(rng);
    for (float& g : store.gradients()) g = 1.0f;  // norms sqrt(7), sqrt(15), sqrt(22)
    for (float& w : store.trainable()) w = 0.0f;  // the update is -(the clipped gradient), exactly
    OptimizerConfig config;
    config.name = "sgd";
    config.momentum = 0;
    config.learning_rate = 1.0f;
    (std::string(mode) == "clipnorm" ? config.clipnorm : config.global_clipnorm) = 3.0f;
    const std::vector<float> before = store.trainable();
    make_optimizer(config, store).value()->apply(store);
    std::vector<float> applied(before.size());
    for (std::size_t i = 0; i < before.size(); ++i) applied[i] = before[i] - store.trainable()[i];
    const double first = norm(applied.data(), 7), second = norm(applied.data() + 7, 15);
    if (std::string(mode) == "clipnorm") {
      EXPECT_FLOAT_EQ(applied[0], 1.0f) << "sqrt(7) < 3: the first tensor is not clipped";
      EXPECT_NEAR(second, 3.0, 1e-5) << mode;
    } else {
      EXPECT_NEAR(std::sqrt(first * first + second * second), 3.0, 1e-5) << mode;
      EXPECT_FLOAT_EQ(applied[0], float(3.0 / std::sqrt(22.0)));
    }
    for (std::size_t i = 8; i < applied.size(); ++i) EXPECT_EQ(applied[i], applied[7]) << "direction kept";
  }
  OptimizerConfig both;
  both.clipnorm = 1.0f;
  both.global_clipnorm = 1.0f;
  EXPECT_EQ(validate_optimizer(both).message(), "clipnorm and global_clipnorm: set at most one of them");
}

// An optimizer from outside the library: sign descent, registered by name.
class SignDescent final : public Optimizer {
 public:
  explicit SignDescent(const OptimizerConfig& config) : Optimizer(config) {}

 protected:
  void update(const Tensor& tensor, float lr) override {
    for (std::size_t i = 0; i < tensor.size; ++i)
      tensor.values[i] -= lr * float((tensor.gradient[i] > 0) - (tensor.gradient[i] < 0));
  }
};

TEST(Optimizers, TheRegistryIsOpen) {
  const auto factory = [](const OptimizerConfig& config) -> Result<std::unique_ptr<Optimizer>> {
    if (config.options.count("unused")) return Status(StatusCode::kInvalidArgument, "unused: not a setting");
    return std::unique_ptr<Optimizer>(new SignDescent(config));
  };
  ASSERT_TRUE(register_optimizer("sign_descent_test", factory).ok());
  EXPECT_EQ(register_optimizer("sign_descent_test", factory).message(),
            "optimizer 'sign_descent_test' is already registered");
  EXPECT_EQ(register_optimizer("adam", factory).message(), "optimizer 'adam' is already registered");

  std::mt19937 rng(16);
  ParameterStore store = small_store(rng);
  random_gradients(store, rng);
  const std::vector<float> before = store.trainable(), gradients = store.gradients();
  OptimizerConfig config;
  config.name = "sign_descent_test";
  config.learning_rate = 0.25f;
  auto optimizer = make_optimizer(config, store);
  ASSERT_TRUE(optimizer.ok()) << optimizer.status().message();
  (*optimizer)->apply(store);
  for (std::size_t i = 0; i < before.size(); ++i)
    EXPECT_EQ(store.trainable()[i], before[i] - (gradients[i] > 0 ? 0.25f : -0.25f)) << i;
  EXPECT_TRUE((*optimizer)->state().empty());

  config.options["unused"] = 1;
  EXPECT_EQ(make_optimizer(config, store).status().message(),
            "optimizer sign_descent_test: unused: not a setting");
  config.name = "rmsprop";
  const std::string unknown = make_optimizer(config, store).status().message();
  EXPECT_EQ(unknown.rfind(
                "optimizer: unknown optimizer 'rmsprop' (expected one of sgd, adam, adamw, adagrad, lars", 0),
            0u)
      << unknown;
  config.name = "sgd";
  config.momentum = 1.0f;
  EXPECT_EQ(validate_optimizer(config).message(), "optimizer sgd: momentum must be in [0, 1), got 1.000000");
}

// State restored into a fresh optimizer continues to the same bits; slots
// are matched by name and size.
TEST(Optimizers, RestoredStateContinuesToTheSameBits) {
  std::mt19937 rng(17);
  ParameterStore store = small_store(rng);
  store.declare("2.weight", {5, 3}, Region::kTable);  // the tables' accumulator is state too
  OptimizerConfig config;
  config.name = "adamw";
  auto first = make_optimizer(config, store).value();
  for (int step = 0; step < 3; ++step) {
    random_gradients(store, rng);
    first->apply(store);
  }
  std::vector<std::pair<std::string, std::vector<float>>> saved;
  for (const OptimizerSlot& slot : first->state()) saved.emplace_back(slot.name, *slot.values);
  ASSERT_EQ(saved.size(), 3u);
  EXPECT_EQ(saved[0].first, "m");
  EXPECT_EQ(saved[2].first, "accumulator");

  ParameterStore copy = store;
  auto second = make_optimizer(config, copy).value();
  ASSERT_TRUE(second->restore(saved, first->steps()).ok());
  random_gradients(store, rng);
  copy.gradients() = store.gradients();
  first->apply(store);
  second->apply(copy);
  for (std::size_t i = 0; i < store.trainable().size(); ++i)
    ASSERT_EQ(bits(copy.trainable()[i]), bits(store.trainable()[i])) << i;

  saved[1].first = "velocity";
  EXPECT_EQ(second->restore(saved, 3).message(),
            "optimizer state 'velocity' does not belong to adamw (its slots: m, v, accumulator)");
  saved.pop_back();
  EXPECT_EQ(second->restore(saved, 3).message(),
            "optimizer state: 2 slot(s) given, adamw keeps 3 (m, v, accumulator)");
}

TEST(Optimizers, CosineDecayFollowsKeras) {
  // Keras' CosineDecay(1e-3, decay_steps=8, alpha=0): the step counted from
  // 0 sets the rate; after decay_steps it stays at 0.
  OptimizerConfig config;
  config.name = "sgd";
  config.momentum = 0;
  config.schedule.kind = LearningRateSchedule::Kind::kCosine;
  config.schedule.decay_steps = 8;
  ParameterStore store;
  store.declare("w", {1}, Region::kTrainable);
  auto sgd = make_optimizer(config, store).value();
  for (uint64_t step = 0; step < 10; ++step) {
    const double expected = step >= 8 ? 0.0 : 1e-3 * 0.5 * (1 + std::cos(M_PI * double(step) / 8));
    EXPECT_FLOAT_EQ(sgd->learning_rate(), float(expected)) << "step " << step;
    store.values(0)[0] = 0.0f;
    store.gradient(0)[0] = 1.0f;
    sgd->apply(store);
    EXPECT_FLOAT_EQ(-store.values(0)[0], float(expected)) << "step " << step;
  }
}

// Each schedule, with and without warmup, against its formula; the
// optimizer's step uses the rate of its step count.
TEST(Optimizers, LearningRateSchedulesFollowTheirFormulas) {
  using Kind = LearningRateSchedule::Kind;
  const double lr = 0.5;
  for (uint64_t warmup : {0u, 3u}) {
    for (Kind kind : {Kind::kConstant, Kind::kCosine, Kind::kExponential, Kind::kStep}) {
      LearningRateSchedule schedule;
      schedule.kind = kind;
      schedule.decay_steps = 4;
      schedule.decay_rate = 0.5;
      schedule.warmup_steps = warmup;
      for (uint64_t t = 0; t < 12; ++t) {
        double expected = lr;
        if (t < warmup) {
          expected = lr * double(t + 1) / double(warmup);
        } else {
          const double u = double(t - warmup);
          if (kind == Kind::kCosine) expected = lr * 0.5 * (1 + std::cos(M_PI * std::min(u, 4.0) / 4));
          if (kind == Kind::kExponential) expected = lr * std::pow(0.5, u / 4);
          if (kind == Kind::kStep) expected = lr * std::pow(0.5, std::floor(u / 4));
        }
        EXPECT_DOUBLE_EQ(schedule.rate(lr, t), expected)
            << LearningRateSchedule::name(kind) << ", warmup " << warmup << ", step " << t;
      }
    }
  }
  EXPECT_EQ(LearningRateSchedule::parse("linear").status().message(),
            "expected constant, cosine, exponential or step, got 'linear'");
  OptimizerConfig config;
  config.schedule.kind = Kind::kStep;
  EXPECT_EQ(validate_optimizer(config).message(), "schedule step: decay_steps must be >= 1");
  config.schedule.decay_steps = 2;
  config.schedule.decay_rate = 1.5;
  EXPECT_EQ(validate_optimizer(config).message(), "decay_rate must be in (0, 1]");
}

}  // namespace
}  // namespace systole
