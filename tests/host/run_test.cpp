// SPDX-License-Identifier: Apache-2.0
// The run library (systole/run/): the config's callbacks run in the order
// its header promises, found by type, on the lead rank and on the others;
// a TrainingRun opened on examples a caller brings has the config's
// replicas and batches, trains the same bits as the trainer it wraps, and
// refuses examples it cannot train on, naming the key.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <typeindex>
#include <vector>

#include "systole/callbacks.h"
#include "systole/run/callbacks.h"
#include "systole/run/run.h"

namespace systole {
namespace {

// A config from YAML text, as systole.Model and accel_train read one.
RunConfig config_of(const std::string& yaml) {
  RunConfig config;
  const Status read = parse_run_config(yaml, "test", config);
  EXPECT_TRUE(read.ok()) << read.to_string();
  return config;
}

std::vector<std::type_index> types_of(const Callbacks& callbacks) {
  std::vector<std::type_index> types;
  for (const auto& callback : callbacks) types.emplace_back(typeid(*callback));
  return types;
}

class RunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("systole_run_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Every callback the config can name, writing under dir_.
  RunConfig every_callback() const {
    return config_of("callbacks: {early_stopping: {monitor: val_loss, patience: 2}, csv_logger: {filename: " +
                     (dir_ / "log.csv").string() + "}}\ntensorboard: {dir: " + (dir_ / "tb").string() +
                     "}\ncheckpoint: {dir: " + (dir_ / "ckpt").string() + "}\n");
  }

  std::filesystem::path dir_;
};

TEST_F(RunTest, ConfigCallbacksRunInTheOrderTheHeaderPromises) {
  std::shared_ptr<ModelCheckpoint> checkpoints;
  auto lead = make_callbacks(every_callback(), true, false, true, 0, checkpoints);
  ASSERT_TRUE(lead.ok()) << lead.status().to_string();
  const std::vector<std::type_index> expected = {typeid(ProgressBar),     typeid(TerminateOnNaN),
                                                 typeid(CsvLogger),       typeid(TensorBoard),
                                                 typeid(ModelCheckpoint), typeid(EarlyStopping)};
  EXPECT_EQ(types_of(*lead), expected);
  ASSERT_NE(checkpoints, nullptr);
  EXPECT_EQ(lead->at(4), checkpoints);

  // Other ranks write nothing; they decide as rank 0 does.
  std::shared_ptr<ModelCheckpoint> none;
  auto other = make_callbacks(every_callback(), false, false, true, 0, none);
  ASSERT_TRUE(other.ok()) << other.status().to_string();
  EXPECT_EQ(types_of(*other), (std::vector<std::type_index>{typeid(ProgressBar), typeid(TerminateOnNaN),
                                                            typeid(EarlyStopping)}));
  EXPECT_EQ(none, nullptr);
}

TEST_F(RunTest, AValidationMonitorWithoutAValidationSetOpensNoFile) {
  std::shared_ptr<ModelCheckpoint> checkpoints;
  auto made = make_callbacks(every_callback(), true, false, false, 0, checkpoints);
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.status().message().find("callbacks.early_stopping.monitor: val_loss is not available"),
            std::string::npos)
      << made.status().to_string();
  EXPECT_FALSE(std::filesystem::exists(dir_ / "log.csv"));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "tb"));
}

TEST_F(RunTest, APrintingCallbackGoesRightAfterTheProgressBarWhereverItIs) {
  const std::shared_ptr<Callback> bar = std::make_shared<ProgressBar>(),
                                  mine = std::make_shared<LambdaCallback>(),
                                  nan = std::make_shared<TerminateOnNaN>();
  Callbacks callbacks = {nan, bar};
  add_after_progress_bar(callbacks, mine);
  EXPECT_EQ(callbacks, (Callbacks{nan, bar, mine}));
  Callbacks without = {nan};
  add_after_progress_bar(without, mine);
  EXPECT_EQ(without, (Callbacks{mine, nan}));
}

// 3 classes, the arg-max of a fixed linear map; `seed` picks the examples.
std::shared_ptr<Dataset> examples(uint32_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  auto data = std::make_shared<Dataset>();
  data->examples = count;
  data->features = 7;
  data->shape = {7};
  data->classes = 3;
  for (uint32_t e = 0; e < count; ++e) {
    float score[3] = {0, 0, 0};
    for (uint32_t f = 0; f < 7; ++f) {
      const float x = uniform(rng);
      data->values.push_back(x);
      for (uint32_t c = 0; c < 3; ++c) score[c] += x * float((f * 3 + c) % 5) - 2.0f * x;
    }
    data->labels.push_back(float(std::max_element(score, score + 3) - score));
  }
  return data;
}

constexpr const char* kSmallRun =
    "backend: sw_emu\narray: 16x16\ndevices: 2\nmodel: {hidden: [9]}\n"
    "train: {global_batch: 20, epochs: 2, optimizer: sgd, learning_rate: 0.1}\n";

TEST_F(RunTest, OpensOnExamplesWithTheConfigsReplicasAndTrainsTheTrainersBits) {
  const RunConfig config = config_of(kSmallRun);
  RunOptions options;
  options.examples = examples(107, 1);  // 5 batches of 20 and a remainder
  auto run = TrainingRun::open(config, options);
  ASSERT_TRUE(run.ok()) << run.status().to_string();
  EXPECT_EQ((*run)->trainer().replicas(), 2u);
  ASSERT_NE((*run)->batches(), nullptr);
  EXPECT_EQ((*run)->batches()->batches_per_epoch(), 5u);
  EXPECT_EQ((*run)->data(), nullptr);
  const FitOptions fit_options = (*run)->fit_options();
  EXPECT_EQ(fit_options.epochs, 2u);
  EXPECT_EQ(fit_options.validation_data, nullptr);
  auto history = fit((*run)->trainer(), *(*run)->batches(), fit_options, {});
  ASSERT_TRUE(history.ok()) << history.status().to_string();
  EXPECT_EQ(history->steps, 10u);

  // The same steps by hand on a trainer of the same settings.
  DeviceOptions device_options;
  device_options.array_rows = device_options.array_cols = 16;
  device_options.compute_units = 2;
  auto device = Device::open("sw_emu", 0, device_options);
  ASSERT_TRUE(device.ok());
  auto spec = model_spec(config, *options.examples);
  ASSERT_TRUE(spec.ok());
  auto settings = trainer_settings(config, *spec, 5);
  ASSERT_TRUE(settings.ok());
  auto trainer = Trainer::create(*device, {0, 1}, *settings);
  ASSERT_TRUE(trainer.ok()) << trainer.status().to_string();
  ArraySource batches(*options.examples, config.global_batch, config.seed);
  FitOptions by_hand;
  by_hand.epochs = 2;
  ASSERT_TRUE(fit(**trainer, batches, by_hand, {}).ok());
  EXPECT_EQ((*run)->trainer().parameters().trainable(), (*trainer)->parameters().trainable());
}

TEST_F(RunTest, RefusesExamplesItCannotTrainOnNamingTheKey) {
  const RunConfig config = config_of(kSmallRun);
  RunOptions few;
  few.examples = examples(19, 2);
  auto refused = TrainingRun::open(config, few);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(), "train.global_batch: 20 is more than the 19 training examples");

  RunOptions regression;
  auto targets = examples(40, 3);
  targets->classes = 0;  // float targets, not class indices
  regression.examples = targets;
  auto no_classes = TrainingRun::open(config, regression);
  ASSERT_FALSE(no_classes.ok());
  EXPECT_EQ(no_classes.status().message(), "model.classes: required when the labels are not class indices");

  // A later fit on too few examples keeps the run's batches.
  RunOptions enough;
  enough.examples = examples(40, 4);
  auto run = TrainingRun::open(config, enough);
  ASSERT_TRUE(run.ok()) << run.status().to_string();
  BatchSource* before = (*run)->batches();
  EXPECT_FALSE((*run)->use_batches(examples(5, 5), nullptr).ok());
  EXPECT_EQ((*run)->batches(), before);
  EXPECT_TRUE((*run)->use_batches(examples(60, 6), nullptr).ok());
  EXPECT_EQ((*run)->batches()->batches_per_epoch(), 3u);
}

}  // namespace
}  // namespace systole
