// SPDX-License-Identifier: Apache-2.0
// fit, evaluate and predict, and the callbacks' hooks: fit takes exactly
// the steps a hand-written loop takes (same bits), calls the hooks in
// Keras' order, stops when a callback or an interrupt asks, ends with a
// callback's error, and resumes from initial_epoch to the bits of an
// unbroken run; strict loading of a state_dict file.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "systole/callbacks.h"
#include "systole/fit.h"
#include "systole/training_checkpoint.h"

namespace systole {
namespace {

constexpr uint32_t kFeatures = 13, kClasses = 3, kBatch = 24;  // 12 per replica
constexpr uint64_t kSeed = 5;

// Labels are the arg-max of a fixed random linear map of the features.
Dataset linear_classes(uint32_t examples, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> map(kFeatures * kClasses);
  for (float& w : map) w = uniform(rng);
  Dataset data;
  data.examples = examples;
  data.features = kFeatures;
  data.shape = {kFeatures};
  data.classes = kClasses;
  for (uint32_t e = 0; e < examples; ++e) {
    float best = -1e30f;
    uint8_t label = 0;
    std::vector<float> x(kFeatures);
    for (float& v : x) v = uniform(rng);
    data.values.insert(data.values.end(), x.begin(), x.end());
    for (uint32_t c = 0; c < kClasses; ++c) {
      float score = 0;
      for (uint32_t f = 0; f < kFeatures; ++f) score += x[f] * map[f * kClasses + c];
      if (score > best) best = score, label = uint8_t(c);
    }
    data.labels.push_back(label);
  }
  return data;
}

std::unique_ptr<Trainer> make_trainer(uint32_t units = 2) {
  DeviceOptions options;
  options.array_rows = options.array_cols = 8;
  options.compute_units = units;
  options.threads_per_unit = 1;
  std::vector<uint32_t> unit_list;
  for (uint32_t u = 0; u < units; ++u) unit_list.push_back(u);
  TrainerConfig config;
  config.model = dense_stack(kFeatures, {7}, kClasses);
  config.global_batch = kBatch;
  config.seed = kSeed;
  config.optimizer.learning_rate = 1e-2f;
  return Trainer::create(Device::open("sw_emu", 0, options).value(), unit_list, config).value();
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Records every hook as text.
class Recorder final : public Callback {
 public:
  std::vector<std::string> calls;
  Status on_train_begin(const Logs&) override { return add("train_begin"); }
  Status on_train_end(const Logs& logs) override { return add("train_end " + keys(logs)); }
  Status on_epoch_begin(uint32_t e, const Logs&) override { return add("epoch_begin " + std::to_string(e)); }
  Status on_epoch_end(uint32_t e, const Logs& logs) override {
    return add("epoch_end " + std::to_string(e) + " " + keys(logs));
  }
  Status on_train_batch_begin(uint64_t b, const Logs&) override {
    return add("batch_begin " + std::to_string(b));
  }
  Status on_train_batch_end(uint64_t b, const Logs& logs) override {
    return add("batch_end " + std::to_string(b) + " " + keys(logs));
  }
  Status on_test_begin(const Logs&) override { return add("test_begin"); }
  Status on_test_end(const Logs& logs) override { return add("test_end " + keys(logs)); }
  Status on_predict_begin(const Logs&) override { return add("predict_begin"); }
  Status on_predict_end(const Logs&) override { return add("predict_end"); }
  Status on_predict_batch_end(uint64_t b, const Logs& logs) override {
    return add("predict_batch_end " + std::to_string(b) + " " + std::to_string(int(logs.at("examples"))));
  }

 private:
  Status add(std::string call) {
    calls.push_back(std::move(call));
    return ok_status();
  }
  static std::string keys(const Logs& logs) {
    std::string text;
    for (const auto& [name, value] : logs) text += (text.empty() ? "" : ",") + name;
    return text;
  }
};

TEST(Fit, TakesTheStepsOfAHandWrittenLoopToTheBit) {
  const Dataset data = linear_classes(5 * kBatch + 7, 1);  // 5 full batches and a remainder
  auto by_fit = make_trainer(), by_hand = make_trainer();
  ArraySource source(data, kBatch, kSeed);
  FitOptions options;
  options.epochs = 2;
  auto history = fit(*by_fit, source, options);
  ASSERT_TRUE(history.ok()) << history.status().to_string();
  for (uint32_t epoch = 0; epoch < 2; ++epoch) {
    BatchStream stream(data, kBatch, kSeed, epoch, /*shuffle=*/true);
    Batch batch;
    while (*stream.next(batch)) ASSERT_TRUE(by_hand->step(batch).ok());
  }
  EXPECT_EQ(history->steps, 10u);
  EXPECT_EQ(history->examples, 10u * kBatch);
  EXPECT_EQ(history->epochs, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(history->history.at("loss").size(), 2u);
  EXPECT_TRUE(same_bits(by_fit->parameters().trainable(), by_hand->parameters().trainable()));
  EXPECT_EQ(by_fit->optimizer().steps(), 10u);
}

TEST(Fit, CallsTheHooksInKerasOrder) {
  const Dataset data = linear_classes(2 * kBatch, 2), validation = linear_classes(30, 3);
  auto trainer = make_trainer();
  ArraySource source(data, kBatch, kSeed);
  auto recorder = std::make_shared<Recorder>();
  FitOptions options;
  options.epochs = 1;
  options.validation_data = &validation;
  ASSERT_TRUE(fit(*trainer, source, options, {recorder}).ok());
  const std::vector<std::string> expected = {"train_begin",
                                             "epoch_begin 0",
                                             "batch_begin 0",
                                             "batch_end 0 accuracy,loss",
                                             "batch_begin 1",
                                             "batch_end 1 accuracy,loss",
                                             "test_begin",
                                             "test_end accuracy,loss",
                                             "epoch_end 0 accuracy,learning_rate,loss,val_accuracy,val_loss",
                                             "train_end accuracy,learning_rate,loss,val_accuracy,val_loss"};
  EXPECT_EQ(recorder->calls, expected);

  // predict: one batch hook per command list of per-replica batches.
  recorder->calls.clear();
  auto logits = predict(*trainer, validation.values.data(), validation.examples, {recorder});
  ASSERT_TRUE(logits.ok());
  EXPECT_EQ(recorder->calls,
            (std::vector<std::string>{"predict_begin", "predict_batch_end 0 12", "predict_batch_end 1 12",
                                      "predict_batch_end 2 6", "predict_end"}));
  // The same logits as the trainer's own predict, to the bit.
  auto direct = trainer->predict(validation.values.data(), validation.examples);
  ASSERT_TRUE(direct.ok());
  EXPECT_TRUE(same_bits(*logits, *direct));
  // evaluate's logs are the trainer's totals.
  auto logs = evaluate(*trainer, validation);
  auto totals = trainer->evaluate(validation);
  ASSERT_TRUE(logs.ok() && totals.ok());
  EXPECT_EQ(logs->at("loss"), totals->loss_sum / totals->examples);
  EXPECT_EQ(logs->at("accuracy"), totals->metric_sums[0] / totals->metric_sums[1]);  // hits, examples
}

// Asks fit to stop at the end of epoch `at`.
class StopAt final : public Callback {
 public:
  explicit StopAt(uint32_t at) : at_(at) {}
  Status on_epoch_end(uint32_t epoch, const Logs&) override {
    if (epoch == at_) request_stop_training();
    return ok_status();
  }

 private:
  uint32_t at_;
};

// Fails in batch `at` of the first epoch.
class FailAt final : public Callback {
 public:
  explicit FailAt(uint64_t at) : at_(at) {}
  Status on_train_batch_end(uint64_t batch, const Logs&) override {
    if (batch == at_) return Status(StatusCode::kAborted, "user callback: no more");
    return ok_status();
  }

 private:
  uint64_t at_;
};

TEST(Fit, StopsWhenACallbackOrAnInterruptAsks) {
  const Dataset data = linear_classes(3 * kBatch, 4);
  {
    auto trainer = make_trainer();
    ArraySource source(data, kBatch, kSeed);
    FitOptions options;
    options.epochs = 5;
    auto history = fit(*trainer, source, options, {std::make_shared<StopAt>(1)});
    ASSERT_TRUE(history.ok());
    EXPECT_TRUE(history->stopped_early);
    EXPECT_EQ(history->epochs, (std::vector<uint32_t>{0, 1}));
  }
  {
    auto trainer = make_trainer();
    ArraySource source(data, kBatch, kSeed);
    auto history = fit(*trainer, source, FitOptions{}, {std::make_shared<FailAt>(1)});
    ASSERT_FALSE(history.ok());
    EXPECT_EQ(history.status().message(), "user callback: no more");
    EXPECT_EQ(trainer->optimizer().steps(), 2u);  // the failing batch's step was taken
  }
  {
    auto trainer = make_trainer();
    ArraySource source(data, kBatch, kSeed);
    FitOptions options;
    options.epochs = 3;
    uint32_t asked = 0;
    options.interrupt = [&asked]() -> Result<int> { return ++asked == 4 ? 15 : 0; };
    auto history = fit(*trainer, source, options);
    ASSERT_TRUE(history.ok());
    EXPECT_EQ(history->interrupted, 15);
    EXPECT_EQ(history->interrupted_epoch, 1u);
    EXPECT_EQ(history->interrupted_batch, 1u);
    EXPECT_EQ(history->interrupted_batches, 3u);
    EXPECT_EQ(trainer->optimizer().steps(), 4u);
  }
}

TEST(Fit, ResumingAtAnEpochGivesTheBitsOfAnUnbrokenRun) {
  const Dataset data = linear_classes(4 * kBatch + 5, 6);
  auto unbroken = make_trainer(), resumed = make_trainer();
  FitOptions options;
  options.epochs = 3;
  ArraySource a(data, kBatch, kSeed), b(data, kBatch, kSeed);
  ASSERT_TRUE(fit(*unbroken, a, options).ok());
  options.epochs = 1;
  ASSERT_TRUE(fit(*resumed, b, options).ok());
  options.initial_epoch = 1;
  options.epochs = 3;
  auto history = fit(*resumed, b, options);
  ASSERT_TRUE(history.ok());
  EXPECT_EQ(history->epochs, (std::vector<uint32_t>{1, 2}));
  EXPECT_TRUE(same_bits(unbroken->parameters().trainable(), resumed->parameters().trainable()));
}

TEST(Fit, RefusesWhatCannotTrain) {
  const Dataset small = linear_classes(kBatch - 1, 7);
  auto trainer = make_trainer();
  ArraySource source(small, kBatch, kSeed);
  auto history = fit(*trainer, source, FitOptions{});
  ASSERT_FALSE(history.ok());
  EXPECT_NE(history.status().message().find("no full batch of 24"), std::string::npos)
      << history.status().message();
}

// torch_xla's smoke test: a small convolutional net with BatchNorm trained
// on constant images of one label. The convolution's output is the same
// at every pixel, so batch normalisation sees no variance and its input
// gradient's terms cancel exactly: the convolution's bias gradient is a
// sum that is zero but for fp32 rounding. Summed in fp32 the bias moves
// about 4e-8 in 40 steps and every prediction is the label, as in
// PyTorch; a sum whose terms were first rounded to bf16 walked it 1.3e-3
// here (and PyTorch's net through systole.torch far enough that every
// prediction flipped). On placement: host and placement: device, 2
// replicas.
TEST(Fit, ConstantImagesWithBatchNormLearnTheirLabel) {
  auto layer = [](std::string type, std::vector<std::pair<std::string, std::string>> fields) {
    return LayerConfig{std::move(type), std::move(fields)};
  };
  constexpr uint32_t kSide = 10, kLabel = 3, kExamples = 8 * kBatch;
  Dataset data;
  data.examples = kExamples;
  data.features = kSide * kSide;
  data.shape = {kSide, kSide, 1};
  data.classes = 10;
  data.values.assign(std::size_t(kExamples) * kSide * kSide, 1.0f);
  data.labels.assign(kExamples, kLabel);
  for (Placement placement : {Placement::kHost, Placement::kDevice}) {
    SCOPED_TRACE(placement == Placement::kHost ? "placement: host" : "placement: device");
    DeviceOptions device;
    device.array_rows = device.array_cols = 8;
    device.compute_units = 2;
    device.threads_per_unit = 1;
    TrainerConfig config;
    config.model.input_shape = {kSide, kSide, 1};
    config.model.classes = 10;
    // As torch_xla's MNIST model: convolution, pooling, ReLU, then batch
    // normalisation (momentum 0.9: PyTorch's 0.1) into the logits.
    config.model.layers = {layer("conv2d", {{"filters", "7"}, {"kernel_size", "3"}}),
                           layer("max_pooling2d", {{"pool_size", "2"}}),
                           layer("relu", {}),
                           layer("batch_normalization", {{"momentum", "0.9"}}),
                           layer("flatten", {}),
                           layer("dense", {{"units", "10"}})};
    config.global_batch = kBatch;
    config.seed = kSeed;
    config.optimizer.name = "sgd";
    config.optimizer.learning_rate = 0.01f;
    config.optimizer.momentum = 0.5f;
    config.placement = placement;
    auto trainer = Trainer::create(Device::open("sw_emu", 0, device).value(), {0, 1}, config);
    ASSERT_TRUE(trainer.ok()) << trainer.status().to_string();
    // The convolution's bias: the first entry of 7 values named so (batch
    // normalisation's follows it).
    const ParameterStore& store = (*trainer)->parameters();
    const ParameterStore::Entry* bias = nullptr;
    for (const ParameterStore::Entry& entry : store.entries())
      if (!bias && entry.size == 7 && entry.name.size() > 5 &&
          entry.name.substr(entry.name.size() - 5) == ".bias")
        bias = &entry;
    ASSERT_NE(bias, nullptr);
    const std::vector<float> before(store.trainable().begin() + bias->offset,
                                    store.trainable().begin() + bias->offset + bias->size);
    ArraySource source(data, kBatch, kSeed);
    FitOptions options;
    options.epochs = 5;  // 40 steps
    ASSERT_TRUE(fit(**trainer, source, options).ok());
    for (uint32_t c = 0; c < 7; ++c)
      EXPECT_LT(std::fabs(store.trainable()[bias->offset + c] - before[c]), 1e-5f)
          << bias->name << "[" << c << "]";
    auto logs = evaluate(**trainer, data);
    ASSERT_TRUE(logs.ok()) << logs.status().to_string();
    EXPECT_EQ(logs->at("accuracy"), 1.0);
  }
}

TEST(LoadWeights, IsStrictAboutTheStateDict) {
  const std::string dir = ::testing::TempDir() + "/load_weights";
  std::filesystem::create_directories(dir);
  auto source = make_trainer(), target = make_trainer();
  // Different weights: one step of training on the source.
  const Dataset data = linear_classes(kBatch, 8);
  ArraySource batches(data, kBatch, kSeed);
  ASSERT_TRUE(fit(*source, batches, FitOptions{}).ok());
  ASSERT_FALSE(same_bits(source->parameters().trainable(), target->parameters().trainable()));

  Checkpoint state_dict = make_model_file(*source);
  state_dict.metadata.clear();  // as PyTorch's save_file writes it
  ASSERT_TRUE(write_safetensors(dir + "/good.safetensors", state_dict).ok());
  ASSERT_TRUE(load_weights(dir + "/good.safetensors", *target).ok());
  EXPECT_TRUE(same_bits(source->parameters().trainable(), target->parameters().trainable()));
  EXPECT_EQ(target->optimizer().steps(), 0u);

  Checkpoint extra = state_dict;
  extra.tensors.push_back({"5.weight", {1}, {0.0f}, false});
  ASSERT_TRUE(write_safetensors(dir + "/extra.safetensors", extra).ok());
  Status status = load_weights(dir + "/extra.safetensors", *target);
  EXPECT_NE(status.message().find("tensor 5.weight is not in the model's state_dict"), std::string::npos)
      << status.message();

  Checkpoint missing = state_dict;
  missing.tensors.erase(missing.tensors.begin());
  ASSERT_TRUE(write_safetensors(dir + "/missing.safetensors", missing).ok());
  status = load_weights(dir + "/missing.safetensors", *target);
  EXPECT_NE(status.message().find("tensor " + state_dict.tensors[0].name + " is missing"), std::string::npos)
      << status.message();

  Checkpoint reshaped = state_dict;
  reshaped.tensors[0].shape = {reshaped.tensors[0].values.size()};
  ASSERT_TRUE(write_safetensors(dir + "/reshaped.safetensors", reshaped).ok());
  status = load_weights(dir + "/reshaped.safetensors", *target);
  EXPECT_NE(status.message().find("has another shape"), std::string::npos) << status.message();

  Checkpoint not_finite = state_dict;
  not_finite.tensors[0].values[0] = std::nanf("");
  ASSERT_TRUE(write_safetensors(dir + "/nan.safetensors", not_finite).ok());
  status = load_weights(dir + "/nan.safetensors", *target);
  EXPECT_NE(status.message().find("must hold finite values"), std::string::npos) << status.message();
  // Refused loads leave the weights as they were.
  EXPECT_TRUE(same_bits(source->parameters().trainable(), target->parameters().trainable()));
}

// Resuming, evaluating and predicting read a checkpoint as strictly as
// load_weights does, each refusing the same damage with the same words.
TEST(LoadWeights, EveryModeRefusesTheSameDamage) {
  const std::string dir = ::testing::TempDir() + "/strict_modes";
  std::filesystem::create_directories(dir);
  auto source = make_trainer();
  const Dataset data = linear_classes(kBatch, 8);
  ArraySource batches(data, kBatch, kSeed);
  ASSERT_TRUE(fit(*source, batches, FitOptions{}).ok());
  const Checkpoint whole = make_checkpoint(*source, 1);
  const std::string first = whole.tensors[0].name;
  const std::pair<const char*, std::function<void(Checkpoint&)>> damages[] = {
      {"is not in the model's state_dict (strict loading)",
       [](Checkpoint& c) {
         c.tensors.push_back({"5.weight", {1}, {0.0f}, false});
       }},
      {"is not in the model's state_dict (strict loading)",
       [](Checkpoint& c) {
         c.tensors.push_back({"optimizer.m.5.weight", {1}, {0.0f}, false});
       }},
      {"is missing", [](Checkpoint& c) { c.tensors.erase(c.tensors.begin()); }},
      {"has another shape", [](Checkpoint& c) { c.tensors[0].shape = {c.tensors[0].values.size()}; }},
      {"must hold finite values", [](Checkpoint& c) { c.tensors[0].values[0] = std::nanf(""); }},
      {"must hold finite values", [](Checkpoint& c) { c.tensors[0].values[1] = -INFINITY; }},
  };
  ASSERT_TRUE(write_safetensors(dir + "/good.safetensors", whole).ok());
  auto fresh = make_trainer();
  ASSERT_TRUE(resume_from(dir + "/good.safetensors", *fresh).ok());
  ASSERT_TRUE(restore_model(whole, dir + "/good.safetensors", *fresh).ok());
  ASSERT_TRUE(load_weights(dir + "/good.safetensors", *fresh).ok())
      << "a checkpoint's optimizer slots are known";
  int n = 0;
  for (const auto& [words, damage] : damages) {
    Checkpoint damaged = whole;
    damage(damaged);
    const std::string path = dir + "/damaged" + std::to_string(n++) + ".safetensors";
    ASSERT_TRUE(write_safetensors(path, damaged).ok());
    auto target = make_trainer();
    const Status statuses[] = {resume_from(path, *target).status(), restore_model(damaged, path, *target),
                               load_weights(path, *target)};
    for (const Status& status : statuses) {
      EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << path;
      EXPECT_NE(status.message().find(words), std::string::npos) << status.message();
      EXPECT_EQ(status.message().rfind(path + ": tensor ", 0), 0u) << status.message();
    }
  }
}

}  // namespace
}  // namespace systole
