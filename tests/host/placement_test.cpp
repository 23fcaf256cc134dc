// SPDX-License-Identifier: Apache-2.0
// placement: device (label emu) keeps the parameters, gradients and
// optimizer state on the card: the same bits as placement: host, for every
// kind of layer and optimizer, however many replicas and processes, resumed
// or not.
#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "common/thread_job.h"
#include "systole/trainer.h"
#include "training_models.h"

namespace systole {
namespace {

using namespace testing::training;

struct PlacementCase {
  const char* name;
  ModelSpec model;
  std::vector<uint32_t> units;
  OptimizerConfig optimizer;
  bool update_on_card;  // the optimizer has an engine form
};

void PrintTo(const PlacementCase& c, std::ostream* out) { *out << c.name; }

OptimizerConfig optimizer_named(const std::string& name, std::optional<float> decay = std::nullopt) {
  OptimizerConfig config;
  config.name = name;
  config.learning_rate = name == "sgd" || name == "lars" ? 0.1f : 0.01f;
  config.nesterov = true;
  config.weight_decay = decay;
  return config;
}

std::vector<PlacementCase> placement_cases() {
  OptimizerConfig clipped = optimizer_named("adam");
  clipped.clipnorm = 0.05f;
  return {
      {"mlp_adam_one_unit", small_shape().spec(), {0}, optimizer_named("adam"), true},
      {"mlp_nesterov_decay_three_units",
       small_shape().spec(),
       {0, 1, 2},
       optimizer_named("sgd", 0.01f),
       true},
      {"mlp_adamw_two_units", small_shape().spec(), {1, 0}, optimizer_named("adamw"), true},
      {"cnn_sync_batchnorm_two_units", cnn_spec(true), {0, 1}, optimizer_named("adam"), true},
      {"guide_cnn_two_units", guide_cnn_spec(), {0, 1}, optimizer_named("adam"), true},
      {"padded_cnn_two_units", padded_cnn_spec(), {0, 1}, optimizer_named("sgd"), true},
      {"transformer_block_two_units", transformer_block(), {0, 1}, optimizer_named("adam"), true},
      {"lars_on_the_host_two_units", small_shape().spec(), {0, 1}, optimizer_named("lars"), false},
      {"clipped_adam_on_the_host", small_shape().spec(), {0}, clipped, false},
  };
}

std::unique_ptr<Trainer> placed_trainer(const PlacementCase& c, Placement placement) {
  Device device = open_device(uint32_t(c.units.size()));
  TrainerConfig config;
  config.model = c.model;
  config.optimizer = c.optimizer;
  config.global_batch = 16 * uint32_t(c.units.size());
  config.seed = 5;
  config.placement = placement;
  return Trainer::create(device, c.units, config).value();
}

class Placed : public ::testing::TestWithParam<PlacementCase> {};

// Every region and every slot, bit for bit.
void expect_same_state(const Trainer& a, const Trainer& b, const std::string& when) {
  for (Region region : {Region::kTrainable, Region::kBuffer, Region::kTable}) {
    const std::vector<float>& x = a.parameters().region(region);
    const std::vector<float>& y = b.parameters().region(region);
    ASSERT_EQ(x.size(), y.size());
    std::size_t first = 0;
    while (first < x.size() && std::memcmp(&x[first], &y[first], 4) == 0) ++first;
    EXPECT_EQ(first, x.size()) << "region " << int(region) << " " << when << ": element " << first << " of "
                               << x.size() << ", " << (first < x.size() ? x[first] : 0.0f) << " against "
                               << (first < x.size() ? y[first] : 0.0f);
  }
  const std::vector<OptimizerSlot> x = a.optimizer().state(), y = b.optimizer().state();
  ASSERT_EQ(x.size(), y.size());
  for (std::size_t k = 0; k < x.size(); ++k)
    EXPECT_EQ(std::memcmp(x[k].values->data(), y[k].values->data(), x[k].values->size() * 4), 0)
        << "slot " << x[k].name << " " << when;
  EXPECT_EQ(a.optimizer().steps(), b.optimizer().steps());
}

TEST_P(Placed, OnTheCardTheSameBitsAsOnTheHost) {
  const PlacementCase& c = GetParam();
  const uint32_t seed = 31;
  SCOPED_TRACE(std::string("seed ") + std::to_string(seed));
  const uint32_t batch = 16 * uint32_t(c.units.size());
  const Dataset data = synthetic(5 * batch, seed);
  auto host = placed_trainer(c, Placement::kHost);
  auto card = placed_trainer(c, Placement::kDevice);
  EXPECT_TRUE(host->notices().empty());
  if (c.update_on_card) {
    EXPECT_TRUE(card->notices().empty());
  } else {
    ASSERT_EQ(card->notices().size(), 1u);
    EXPECT_NE(card->notices()[0].find("optimizer " + c.optimizer.name), std::string::npos)
        << card->notices()[0];
  }
  ModelValues saved;
  for (uint32_t s = 0; s < 4; ++s) {
    const Batch step = whole(data.slice(s * batch, batch));
    auto a = host->step(step), b = card->step(step);
    ASSERT_TRUE(a.ok()) << a.status().to_string();
    ASSERT_TRUE(b.ok()) << b.status().to_string();
    EXPECT_EQ(a->loss_sum, b->loss_sum) << "step " << s;
    if (s == 1) {
      // What a checkpoint saves after step 1.
      expect_same_state(*host, *card, "after step 1");
      saved.trainable = card->parameters().trainable();
      saved.buffers = card->parameters().buffers();
      saved.tables = card->parameters().tables();
      for (const OptimizerSlot& slot : card->optimizer().state())
        saved.optimizer_state.push_back({slot.name, *slot.values});
    }
  }
  expect_same_state(*host, *card, "after step 3");
  EXPECT_TRUE(card->replicas_identical().value());
  const Dataset held_out = synthetic(40, seed + 1);
  const StepResult a = host->evaluate(held_out).value(), b = card->evaluate(held_out).value();
  EXPECT_EQ(a.loss_sum, b.loss_sum);
  EXPECT_EQ(a.metric_sums, b.metric_sums);

  // Resumed on the card from step 1's state, steps 2 and 3 again give the
  // same bits.
  ASSERT_TRUE(card->restore(saved, 2).ok());
  for (uint32_t s = 2; s < 4; ++s) ASSERT_TRUE(card->step(whole(data.slice(s * batch, batch))).ok());
  expect_same_state(*host, *card, "resumed");
}

INSTANTIATE_TEST_SUITE_P(Training, Placed, ::testing::ValuesIn(placement_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

// Across processes (threads, each with a member of a job that chains the
// sum as the MPI group does): P processes of K units with placement: device
// take the same steps, to the bit, as one process of P * K units with
// placement: host. With K > 1 each card sums its units' gradients after
// the earlier processes' sum and passes one sum on; with K = 1 the host
// sums.
TEST(Training, AcrossProcessesEachCardChainsItsSumOntoTheEarlierOnes) {
  const uint32_t seed = 37, processes = 3;
  SCOPED_TRACE(std::string("seed ") + std::to_string(seed));
  for (const uint32_t local : {2u, 1u}) {
    SCOPED_TRACE(std::to_string(processes) + " processes of " + std::to_string(local) + " units");
    const uint32_t replicas = processes * local, batch = 16 * replicas;
    const Dataset data = synthetic(3 * batch, seed);
    TrainerConfig config;
    config.model = small_shape().spec();
    config.optimizer = optimizer_named("adam");
    config.global_batch = batch;
    config.seed = 5;
    std::vector<uint32_t> all_units(replicas);
    for (uint32_t u = 0; u < replicas; ++u) all_units[u] = u;
    auto reference = Trainer::create(open_device(replicas), all_units, config).value();
    for (uint32_t s = 0; s < 3; ++s) ASSERT_TRUE(reference->step(whole(data.slice(s * batch, batch))).ok());

    config.placement = Placement::kDevice;
    testing::ThreadJob job(processes);
    std::vector<std::thread> threads;
    for (uint32_t p = 0; p < processes; ++p)
      threads.emplace_back([&, p] {
        testing::ThreadJob::Member group(job, p);
        std::vector<uint32_t> units(local);
        for (uint32_t u = 0; u < local; ++u) units[u] = u;
        auto trainer = Trainer::create(open_device(local), units, config, &group);
        ASSERT_TRUE(trainer.ok()) << trainer.status().to_string();
        EXPECT_TRUE((*trainer)->notices().empty());
        for (uint32_t s = 0; s < 3; ++s) {
          auto step = (*trainer)->step(whole(data.slice(s * batch, batch)));
          ASSERT_TRUE(step.ok()) << step.status().to_string();
        }
        expect_same_state(*reference, **trainer, "process " + std::to_string(p) + " after step 2");
        EXPECT_TRUE((*trainer)->replicas_identical().value());
      });
    for (std::thread& thread : threads) thread.join();
  }
}

TEST(Training, OnUnitsWithoutTheVectorEngineTheParametersStayOnTheHost) {
  DeviceOptions options;
  options.array_rows = options.array_cols = kArray;
  options.sw_emu_features = 0;
  Device device = Device::open("sw_emu", 0, options).value();
  TrainerConfig config;
  config.model = small_shape().spec();
  config.global_batch = 16;
  config.placement = Placement::kDevice;
  auto trainer = Trainer::create(device, {0}, config).value();
  ASSERT_EQ(trainer->notices().size(), 1u);
  EXPECT_NE(trainer->notices()[0].find("no vector engine"), std::string::npos) << trainer->notices()[0];
  EXPECT_TRUE(trainer->step(whole(synthetic(16, 2))).ok());
}

}  // namespace
}  // namespace systole
