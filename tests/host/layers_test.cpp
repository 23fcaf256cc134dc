// SPDX-License-Identifier: Apache-2.0
// The layers (label emu): every layer type's backward pass against finite
// differences on exact arithmetic; the device path (staging, transposes,
// tiling, K chained over chunks) against tests/reference bit for bit; and
// the errors bad layer configs get.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "common/matmul_executors.h"
#include "systole/dot_score.h"
#include "systole/loss.h"
#include "systole/model.h"
#include "systole/numerics.h"

namespace systole {
namespace {

struct Case {
  const char* name;
  ModelSpec spec;
};

LayerConfig layer(const std::string& type, std::vector<std::pair<std::string, std::string>> fields = {}) {
  return {type, std::move(fields)};
}

// Small models that put every layer type behind a layer with weights, so
// that each one's input gradient is checked too. Sizes are awkward on
// purpose (odd, strided, asymmetric padding).
std::vector<Case> cases() {
  return {
      {"dense_relu",
       {{6},
        3,
        {layer("dense", {{"units", "5"}, {"activation", "relu"}}), layer("dense", {{"units", "4"}}),
         layer("relu"), layer("dense", {{"units", "3"}})}}},
      {"conv_pool",
       {{5, 5, 2},
        3,
        {layer("conv2d",
               {{"filters", "3"}, {"kernel_size", "3"}, {"padding", "same"}, {"activation", "relu"}}),
         layer("max_pooling2d", {{"pool_size", "2"}}), layer("flatten"), layer("dense", {{"units", "3"}})}}},
      {"conv_strided",
       {{6, 5, 1},
        3,
        {layer("conv2d",
               {{"filters", "2"}, {"kernel_size", "[3, 2]"}, {"strides", "2"}, {"padding", "same"}}),
         layer("conv2d",
               {{"filters", "2"}, {"kernel_size", "2"}, {"activation", "relu"}, {"use_bias", "false"}}),
         layer("flatten"), layer("dense", {{"units", "3"}})}}},
      {"dense_batch_norm",
       {{6},
        3,
        {layer("dense", {{"units", "5"}}), layer("batch_normalization"), layer("relu"),
         layer("dense", {{"units", "3"}})}}},
      {"conv_batch_norm",
       {{4, 4, 1},
        3,
        {layer("conv2d", {{"filters", "3"}, {"kernel_size", "3"}, {"padding", "same"}}),
         layer("batch_normalization", {{"momentum", "0.9"}}), layer("flatten"),
         layer("dense", {{"units", "3"}})}}},
      {"dropout",
       {{6},
        3,
        {layer("dense", {{"units", "8"}, {"activation", "relu"}}), layer("dropout", {{"rate", "0.4"}}),
         layer("dense", {{"units", "3"}})}}},
      // Graphs: a residual block, whose first output feeds two layers (its
      // gradient is the sum of both), and a three-way add that takes one
      // tensor twice and the model's input once.
      {"residual_graph",
       {{6},
        3,
        {layer("dense", {{"name", "d1"}, {"units", "5"}, {"activation", "relu"}}),
         layer("dense", {{"name", "d2"}, {"units", "5"}, {"inputs", "d1"}}),
         layer("add", {{"name", "join"}, {"inputs", "[d2, d1]"}}), layer("relu", {{"inputs", "join"}}),
         layer("dense", {{"units", "3"}, {"inputs", "relu"}})}}},
      // A Transformer's host-side layers on [positions, width] rows: token
      // vectors plus learned positions, layer normalisation, both GELUs, a
      // softmax and the mean over positions.
      {"sequence_layers",
       {{12},
        3,
        {layer("reshape", {{"target_shape", "[4, 3]"}}), layer("dense", {{"name", "tokens"}, {"units", "5"}}),
         layer("position_embedding", {{"name", "positions"}, {"sequence_length", "6"}}),
         layer("add", {{"inputs", "[tokens, positions]"}}),
         layer("layer_normalization", {{"epsilon", "1e-5"}}), layer("gelu"), layer("dense", {{"units", "5"}}),
         layer("gelu", {{"approximate", "true"}}), layer("softmax"), layer("global_average_pooling1d"),
         layer("dense", {{"units", "3"}})}}},
      // A Transformer block: self-attention (2 heads, key_dim from the
      // width) with a residual join and layer normalisation; then causal
      // attention with explicit key_dim and value_dim, no biases and
      // dropout on the attention probabilities.
      {"attention_block",
       {{12},
        3,
        {layer("reshape", {{"target_shape", "[4, 3]"}}), layer("dense", {{"name", "tokens"}, {"units", "4"}}),
         layer("multi_head_attention", {{"name", "attention"}, {"num_heads", "2"}}),
         layer("add", {{"inputs", "[tokens, attention]"}}), layer("layer_normalization"),
         layer("multi_head_attention", {{"num_heads", "3"},
                                        {"key_dim", "2"},
                                        {"value_dim", "3"},
                                        {"use_bias", "false"},
                                        {"causal", "true"},
                                        {"dropout", "0.3"}}),
         layer("global_average_pooling1d"), layer("dense", {{"units", "3"}})}}},
      {"repeated_inputs_graph",
       {{6},
        3,
        {layer("dense", {{"name", "d1"}, {"units", "6"}, {"inputs", "input"}}),
         layer("add", {{"inputs", "[d1, input, d1]"}}), layer("dense", {{"units", "3"}})}}},
  };
}

struct Batch {
  std::vector<float> inputs;
  std::vector<float> labels;
  uint32_t size = 0;
};

Batch random_batch(const ModelSpec& spec, uint32_t size, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  Batch batch;
  batch.size = size;
  batch.inputs.resize(size * shape_elements(spec.input_shape));
  for (float& x : batch.inputs) x = uniform(rng);
  for (uint32_t i = 0; i < size; ++i) batch.labels.push_back(float(rng() % spec.classes));
  return batch;
}

// Mean loss of a training-mode forward pass; with `gradients`, the
// backward pass fills the store's gradients.
double loss(Model& model, MatmulExecutor& matmul, const Batch& batch, bool gradients) {
  LayerContext context;
  context.matmul = &matmul;
  context.training = true;
  context.seed = 7;
  context.step = 3;
  EXPECT_TRUE(model.forward(context, batch.inputs.data(), batch.size).ok());
  std::vector<float> logits_gradient;
  const double loss_sum = make_loss({"sparse_categorical_crossentropy", {}})
                              .value()
                              ->compute(model.logits(), batch.labels.data(), 1, float(batch.size),
                                        gradients ? &logits_gradient : nullptr)
                              .value();
  if (gradients) {
    EXPECT_TRUE(model.backward(context, logits_gradient).ok());
  }
  return loss_sum / batch.size;
}

// Central differences of the loss in each of `values` (parameters of
// `model`) against analytic(i).
template <class Analytic>
void check_finite_differences(Model& model, const Batch& batch, std::vector<float>& values, Analytic analytic,
                              const std::string& what) {
  testing::ExactMatmul exact;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const float saved = values[i], h = 1e-3f;
    values[i] = saved + h;
    const double plus = loss(model, exact, batch, false);
    values[i] = saved - h;
    const double minus = loss(model, exact, batch, false);
    values[i] = saved;
    const double numeric = (plus - minus) / (2.0 * h);
    EXPECT_NEAR(analytic(i), numeric, 2e-3 + 2e-2 * std::fabs(numeric)) << what << " " << i;
  }
}

TEST(Layers, GradientsMatchFiniteDifferences) {
  for (const Case& c : cases()) {
    const uint32_t seed = 21;
    auto model = Model::build(c.spec, seed).value();
    testing::ExactMatmul exact;
    const Batch batch = random_batch(c.spec, 5, seed);
    loss(*model, exact, batch, true);
    const std::vector<float> analytic = model->parameters().gradients();
    ASSERT_EQ(analytic.size(), model->parameters().trainable().size());
    check_finite_differences(
        *model, batch, model->parameters().trainable(), [&](std::size_t i) { return analytic[i]; },
        std::string(c.name) + ", seed " + std::to_string(seed) + ", parameter");
  }
}

// An embedding (a table per column, ids repeated within the batch so rows
// sum several uses) under a two-tower head, with and without row biases:
// the dense gradients and the table's row-sparse gradient against finite
// differences on every table value, untouched rows included (they must be
// absent from the gradient).
TEST(Layers, EmbeddingGradientsMatchFiniteDifferences) {
  for (const char* row_bias : {"false", "true"}) {
    SCOPED_TRACE(std::string("row_bias ") + row_bias);
    ModelSpec spec{{2},
                   2,
                   {layer("embedding", {{"input_dim", "[5, 4]"}, {"output_dim", "3"}}),
                    layer("dense", {{"units", "4"}, {"activation", "relu"}}),
                    layer("dense", {{"units", "3"}}), layer("dot", {{"row_bias", row_bias}})}};
    const uint32_t seed = 17;
    auto model = Model::build(spec, seed).value();
    // Rows of U(-1, 1) instead of Keras' U(-0.05, 0.05): pre-activations
    // near 0 would put ReLU kinks inside the differences' step.
    for (float& value : model->parameters().tables()) value *= 20.0f;
    testing::ExactMatmul exact;
    Batch batch;
    batch.size = 6;
    batch.inputs = {0, 1, 3, 1, 0, 2, 3, 1, 0, 0, 1, 3};  // users 2 and 4 never appear
    batch.labels = {1, 0, 1, 1, 0, 1};
    loss(*model, exact, batch, true);
    ParameterStore& store = model->parameters();
    ASSERT_EQ(store.entries()[0].region, Region::kTable);
    const RowSparse sparse = store.sparse_gradient(0);
    EXPECT_EQ(sparse.rows, (std::vector<uint32_t>{0, 1, 3, 5, 6, 7, 8}));  // item i is row 5 + i
    const std::vector<float> dense = store.gradients();
    check_finite_differences(
        *model, batch, store.trainable(), [&](std::size_t i) { return dense[i]; },
        "seed " + std::to_string(seed) + ", dense parameter");
    check_finite_differences(
        *model, batch, store.tables(),
        [&](std::size_t i) -> double {
          const uint32_t row = uint32_t(i / 3);
          const auto at = std::find(sparse.rows.begin(), sparse.rows.end(), row);
          return at == sparse.rows.end() ? 0.0
                                         : sparse.values[std::size_t(at - sparse.rows.begin()) * 3 + i % 3];
        },
        "seed " + std::to_string(seed) + ", table value");
  }
}

// The score with row biases, against the formula by hand.
TEST(Layers, DotRowBiasesAreTheVectorsLastValues) {
  const float user[] = {0.5f, -2.0f, 3.0f}, item[] = {4.0f, 0.25f, -1.5f};
  EXPECT_EQ((DotScore{3, false})(user, item), 0.5f * 4.0f - 2.0f * 0.25f + 3.0f * -1.5f);
  EXPECT_EQ((DotScore{3, true})(user, item), 0.5f * 4.0f - 2.0f * 0.25f + 3.0f - 1.5f);
  ModelSpec one_value{
      {2},
      2,
      {layer("embedding", {{"input_dim", "4"}, {"output_dim", "1"}}), layer("dot", {{"row_bias", "true"}})}};
  EXPECT_EQ(Model::build(one_value, 1).status().message(),
            "model.layers[1] (dot): row_bias: the towers' vectors need at least 2 values (factors, then the "
            "bias), got [2, 1]");
  auto score = dot_score(one_value.layers[1], 5);
  ASSERT_TRUE(score.ok());
  EXPECT_TRUE(score->row_bias);
  EXPECT_FALSE(dot_score(one_value.layers[0], 5).ok());
}

TEST(Layers, EmbeddingIdsOutsideTheTableAreNamed) {
  ModelSpec spec{{2}, 2, {layer("embedding", {{"input_dim", "[5, 4]"}, {"output_dim", "3"}}), layer("dot")}};
  auto model = Model::build(spec, 1).value();
  testing::ExactMatmul exact;
  LayerContext context;
  context.matmul = &exact;
  const float ids[] = {1, 2, 4, 4};  // example 1's item id 4 >= 4
  const Status status = model->forward(context, ids, 2);
  EXPECT_EQ(status.message(), "embedding: example 1, column 1: id 4 is not an integer in [0, 4)");
  const float fraction[] = {1.5f, 0};
  EXPECT_FALSE(model->forward(context, fraction, 1).ok());
  ModelSpec mismatch{{3}, 2, {layer("embedding", {{"input_dim", "[5, 4]"}, {"output_dim", "3"}})}};
  EXPECT_EQ(
      Model::build(mismatch, 1).status().message(),
      "model.layers[0] (embedding): input_dim: 2 sizes for 3 id columns (give one size, or one per column)");
  ModelSpec dot_on_flat{{4}, 2, {layer("dot")}};
  EXPECT_EQ(Model::build(dot_on_flat, 1).status().message(),
            "model.layers[0] (dot): dot expects [2, d] (two towers' vectors), got [4]");
}

Device open_sw_emu(uint32_t size) {
  DeviceOptions options;
  options.array_rows = options.array_cols = size;
  options.threads_per_unit = 1;
  options.hbm_banks = 4;
  options.bank_bytes = 16 << 20;
  auto device = Device::open("sw_emu", 0, options);
  EXPECT_TRUE(device.ok()) << device.status().to_string();
  return device.ok() ? *device : Device();
}

// The device path of a whole training step (forward, backward) against
// the reference numerics, to the bit, on an 8x8 array (37 examples: K
// chains over several blocks, partial tiles everywhere).
TEST(Layers, DevicePassesEqualTheReferenceToTheBit) {
  Device device = open_sw_emu(8);
  for (const Case& c : cases()) {
    const uint32_t seed = 33;
    const Batch batch = random_batch(c.spec, 37, seed);
    auto on_device = Model::build(c.spec, seed).value();
    auto on_reference = Model::build(c.spec, seed).value();
    auto matmul = DeviceMatmul::create(device, 0, std::chrono::seconds(60)).value();
    testing::ReferenceMatmul reference(device.info());
    loss(*on_device, *matmul, batch, true);
    loss(*on_reference, reference, batch, true);
    const std::vector<float>& got = on_device->logits().values;
    const std::vector<float>& want = on_reference->logits().values;
    ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * 4), 0) << c.name << " logits, seed " << seed;
    const std::vector<float>& g = on_device->parameters().gradients();
    const std::vector<float>& r = on_reference->parameters().gradients();
    for (std::size_t i = 0; i < g.size(); ++i)
      ASSERT_EQ(numerics::f32_bits(g[i]), numerics::f32_bits(r[i]))
          << c.name << ", gradient " << i << ", seed " << seed;
  }
}

// A convolution whose im2col matrix is chunked (200 examples of 24x24
// positions, patch 3x3x9) chains dW over the chunks through fp32 C: the
// same bits as the reference's single product, with its output and its
// gradient on the host or on the card.
TEST(Layers, ChunkedConvolutionEqualsOneProduct) {
  const ModelSpec spec{{24, 24, 9},
                       3,
                       {layer("conv2d", {{"filters", "5"}, {"kernel_size", "3"}, {"padding", "same"}}),
                        layer("flatten"), layer("dense", {{"units", "3"}})}};
  Device device = open_sw_emu(16);
  const Batch batch = random_batch(spec, 200, 5);
  auto on_device = Model::build(spec, 5).value();
  auto on_reference = Model::build(spec, 5).value();
  auto on_card = Model::build(spec, 5).value();
  auto matmul = DeviceMatmul::create(device, 0, std::chrono::seconds(60)).value();
  testing::ReferenceMatmul reference(device.info());
  testing::CardKeepingMatmul card(device.info());
  loss(*on_device, *matmul, batch, true);
  loss(*on_reference, reference, batch, true);
  loss(*on_card, card, batch, true);
  EXPECT_GT(matmul->launches(), 4u) << "the convolution was not chunked";
  const std::vector<float>& g = on_device->parameters().gradients();
  const std::vector<float>& r = on_reference->parameters().gradients();
  ASSERT_EQ(std::memcmp(g.data(), r.data(), g.size() * 4), 0);
  // The patches, kept from the forward products for the weight gradient's
  // where the bank has room: in 16 MiB banks some chunks give theirs up
  // (all of col is 18.7 MB of bf16), in 64 MiB banks none do; the same bits.
  const std::size_t col_bytes = std::size_t(200) * 24 * 24 * 3 * 3 * 9 * 2;
  EXPECT_GT(matmul->kept_rows_bytes(), 0u);
  EXPECT_LT(matmul->kept_rows_bytes(), col_bytes);
  DeviceOptions roomy;
  roomy.array_rows = roomy.array_cols = 16;
  roomy.hbm_banks = 4;
  roomy.bank_bytes = 64 << 20;
  auto with_room = Model::build(spec, 5).value();
  auto keeping =
      DeviceMatmul::create(Device::open("sw_emu", 0, roomy).value(), 0, std::chrono::seconds(60)).value();
  loss(*with_room, *keeping, batch, true);
  EXPECT_EQ(keeping->kept_rows_bytes(), col_bytes);
  const std::vector<float>& kept = with_room->parameters().gradients();
  ASSERT_EQ(std::memcmp(kept.data(), r.data(), kept.size() * 4), 0);
  // Its output left on the card a chunk at a time (three chunks; the
  // fourth result left is the dense layer's input gradient), and its
  // gradient read from there a chunk at a time: the same bits.
  EXPECT_EQ(card.results_left, 4u);
  EXPECT_EQ(card.views, 2u);
  const std::vector<float>& k = on_card->parameters().gradients();
  ASSERT_EQ(std::memcmp(k.data(), r.data(), k.size() * 4), 0);
}

void expect_error(const ModelSpec& spec, const std::string& message) {
  auto model = Model::build(spec, 1);
  ASSERT_FALSE(model.ok()) << message;
  EXPECT_NE(model.status().message().find(message), std::string::npos) << model.status().message();
}

TEST(Layers, BadConfigsNameTheLayerAndTheField) {
  const Shape image{28, 28, 1};
  const LayerConfig logits = layer("dense", {{"units", "10"}});
  expect_error(
      {image, 10, {layer("conv2d", {{"filters", "8"}, {"kernel_size", "0"}}), layer("flatten"), logits}},
      "model.layers[0].kernel_size: expected a positive integer or a pair, got '0'");
  expect_error(
      {image,
       10,
       {layer("flatten"), layer("conv2d", {{"filters", "8"}, {"kernel_size", "[3, 3, 3]"}}), logits}},
      "model.layers[1].kernel_size: expected a positive integer or a pair");
  expect_error({image, 10, {layer("conv2d", {{"kernel_size", "3"}}), logits}},
               "model.layers[0].filters: required");
  expect_error({image, 10, {layer("flatten"), layer("dense", {{"units", "-4"}}), logits}},
               "model.layers[1].units: expected a positive integer");
  expect_error({image, 10, {layer("dense", {{"units", "10"}})}},
               "model.layers[0] (dense): dense expects a flat input or rows of one, got [28, 28, 1]");
  expect_error({image, 10, {layer("flatten"), layer("convolution")}},
               "model.layers[1].type: unknown layer type 'convolution'");
  expect_error({image, 10, {layer("flatten"), layer("dense", {{"units", "10"}, {"activaton", "relu"}})}},
               "model.layers[1].activaton: unknown field for dense");
  expect_error({image, 10, {layer("flatten"), layer("dense", {{"units", "10"}, {"activation", "tanh"}})}},
               "model.layers[1].activation: expected relu or linear, got 'tanh'");
  expect_error({image, 10, {layer("flatten"), layer("dense", {{"units", "12"}})}},
               "model.layers[1]: the model ends in [12], expected [10] logits");
  expect_error(
      {image, 10, {layer("conv2d", {{"filters", "2"}, {"kernel_size", "29"}}), layer("flatten"), logits}},
      "model.layers[0] (conv2d): kernel_size: 29x29 is larger than the input [28, 28, 1]");
  expect_error({image, 10, {layer("flatten"), layer("dropout", {{"rate", "1"}}), logits}},
               "model.layers[1].rate: expected a number in [0, 1)");
  expect_error({image, 10, {layer("flatten"), layer("batch_normalization", {{"sync", "yes"}}), logits}},
               "model.layers[1].sync: expected true or false, got 'yes'");
  expect_error(
      {image,
       10,
       {layer("max_pooling2d", {{"pool_size", "2"}, {"padding", "same"}}), layer("flatten"), logits}},
      "model.layers[0].padding: expected valid, got 'same'");
  expect_error({{28, 28}, 10, {layer("flatten"), logits}},
               "model.input_shape: expected [features] or [height, width, channels]");
  expect_error({image, 10, {}}, "model.layers: the model has no layers");
}

TEST(Layers, TorchCodeAndStateDictNames) {
  const ModelSpec spec{{28, 28, 1},
                       10,
                       {layer("conv2d", {{"filters", "4"},
                                         {"kernel_size", "3"},
                                         {"strides", "2"},
                                         {"padding", "same"},
                                         {"activation", "relu"}}),
                        layer("batch_normalization"), layer("flatten"), layer("dense", {{"units", "10"}})}};
  auto model = Model::build(spec, 1).value();
  EXPECT_EQ(
      model->torch_code(),
      "torch.nn.Sequential(torch.nn.ZeroPad2d((0, 1, 0, 1)), torch.nn.Conv2d(1, 4, 3, stride=2), "
      "torch.nn.ReLU(), "
      "torch.nn.BatchNorm2d(4, eps=0.001, momentum=0.01), torch.nn.Flatten(), torch.nn.Linear(784, 10))");
  std::vector<std::string> names;
  for (const auto& entry : model->parameters().entries()) names.push_back(entry.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"1.weight", "1.bias", "3.weight", "3.bias", "3.running_mean",
                                      "3.running_var", "3.num_batches_tracked", "5.weight", "5.bias"}));
  EXPECT_EQ(model->parameters().find("1.weight")->shape, (std::vector<uint64_t>{4, 1, 3, 3}));
}

// A chain written as a graph (every layer naming its input) is the same
// model as the list: the same initial values drawn in the same order, the
// same logits and gradients to the bit; only the tensors' names differ.
TEST(Graphs, AChainWrittenAsAGraphIsTheList) {
  const ModelSpec list = cases()[0].spec;
  ModelSpec graph = list;
  std::string previous = "input";
  for (std::size_t i = 0; i < graph.layers.size(); ++i) {
    const std::string name = "layer" + std::to_string(i);
    graph.layers[i].fields.push_back({"name", name});
    graph.layers[i].fields.push_back({"inputs", previous});
    previous = name;
  }
  auto a = Model::build(list, 4).value();
  auto b = Model::build(graph, 4).value();
  EXPECT_FALSE(a->graph());
  EXPECT_TRUE(b->graph());
  EXPECT_EQ(a->parameters().trainable(), b->parameters().trainable());
  EXPECT_EQ(a->parameters().entries()[0].name, "0.weight");
  EXPECT_EQ(b->parameters().entries()[0].name, "layer0.weight");
  const Batch batch = random_batch(list, 7, 4);
  testing::ExactMatmul exact;
  EXPECT_EQ(loss(*a, exact, batch, true), loss(*b, exact, batch, true));
  EXPECT_EQ(a->parameters().gradients(), b->parameters().gradients());
  EXPECT_NE(b->summary().find("layer1 (dense)"), std::string::npos) << b->summary();
}

// A training pass of `spec` through `card` (an executor that keeps
// activations) gives the logits and gradients of the same pass through
// the reference, bit for bit.
void expect_the_host_paths_bits(const ModelSpec& spec, const Batch& batch, uint32_t seed,
                                const DeviceInfo& device, testing::CardKeepingMatmul& card) {
  auto on_host = Model::build(spec, seed).value();
  auto on_card = Model::build(spec, seed).value();
  testing::ReferenceMatmul host(device);
  loss(*on_host, host, batch, true);
  loss(*on_card, card, batch, true);
  const std::vector<float>& want = on_host->logits().values;
  const std::vector<float>& got = on_card->logits().values;
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * 4), 0) << "logits";
  const std::vector<float>& g = on_card->parameters().gradients();
  const std::vector<float>& r = on_host->parameters().gradients();
  EXPECT_EQ(std::memcmp(g.data(), r.data(), g.size() * 4), 0) << "gradients";
}

// The first `layers` layers of `spec` through `card`: their last output is
// the host's, the same as through the reference.
void expect_a_partial_pass_on_the_host(const ModelSpec& spec, const Batch& batch, uint32_t seed,
                                       std::size_t layers, const DeviceInfo& device,
                                       testing::CardKeepingMatmul& card) {
  auto on_host = Model::build(spec, seed).value();
  auto on_card = Model::build(spec, seed).value();
  testing::ReferenceMatmul host(device);
  LayerContext context;
  context.matmul = &card;
  ASSERT_TRUE(on_card->forward(context, batch.inputs.data(), batch.size, layers).ok());
  context.matmul = &host;
  ASSERT_TRUE(on_host->forward(context, batch.inputs.data(), batch.size, layers).ok());
  EXPECT_EQ(on_card->output(layers).values, on_host->output(layers).values);
}

// With an executor that keeps activations, a tensor stays on the card when
// a dense layer makes it and one dense layer reads it (d1's output here):
// its gradient and ReLU mask stay there too. d2's output has two readers,
// d3's and the add's feed a layer that reads on the host, and the logits
// and a partial pass's last output are the host's. The bits are those of
// the host path.
TEST(Graphs, ActivationsStayOnTheCardBetweenDenseLayersOnly) {
  const uint32_t seed = 6;
  SCOPED_TRACE("seed " + std::to_string(seed));
  const ModelSpec spec{{20},
                       3,
                       {layer("dense", {{"name", "d1"}, {"units", "12"}, {"activation", "relu"}}),
                        layer("dense", {{"name", "d2"}, {"units", "11"}, {"activation", "relu"}}),
                        layer("dense", {{"name", "d3"}, {"units", "11"}}),
                        layer("add", {{"name", "join"}, {"inputs", "[d2, d3]"}}),
                        layer("dense", {{"name", "d4"}, {"units", "3"}})}};
  Device device = open_sw_emu(8);
  const Batch batch = random_batch(spec, 13, seed);
  testing::CardKeepingMatmul card(device.info());
  expect_the_host_paths_bits(spec, batch, seed, device.info(), card);
  // Left: d1's output (forward) and its gradient (d2's dx); read: d1's
  // output by d2 (forward, and dW in backward), the masked gradient by d1's
  // dW and db.
  EXPECT_EQ(card.results_left, 2u);
  EXPECT_EQ(card.operands_read, 4u);
  EXPECT_EQ(card.masks, 1u);

  // The first layer alone: its output is what the host asked for.
  expect_a_partial_pass_on_the_host(spec, batch, seed, 1, device.info(), card);
  EXPECT_EQ(card.results_left, 2u);

  // A list of dense layers keeps every hidden layer's output there.
  const ModelSpec stack = dense_stack(20, {12, 9}, 3);
  auto listed = Model::build(stack, seed).value();
  testing::CardKeepingMatmul stacked(device.info());
  loss(*listed, stacked, random_batch(stack, 13, seed), true);
  EXPECT_EQ(stacked.results_left, 4u);
  EXPECT_EQ(stacked.masks, 2u);
}

// A convolution without a fused ReLU whose output a Flatten hands to a
// dense layer leaves it on the card: the Flatten's output, and the dense
// layer's input gradient on the way back, are views there, and the
// convolution reads that gradient for its dW, db and dx. With a fused ReLU
// the output goes to the host (its mask would need the gradient in the
// output's layout), and so does a partial pass's Flatten output. The bits
// are the host path's.
TEST(Graphs, AConvolutionsOutputStaysOnTheCardThroughAFlatten) {
  const uint32_t seed = 8;
  SCOPED_TRACE("seed " + std::to_string(seed));
  auto spec = [](bool relu) {
    std::vector<std::pair<std::string, std::string>> second{{"filters", "3"}, {"kernel_size", "2"}};
    if (relu) second.push_back({"activation", "relu"});
    return ModelSpec{
        {6, 5, 2},
        3,
        {layer("conv2d",
               {{"filters", "4"}, {"kernel_size", "3"}, {"padding", "same"}, {"activation", "relu"}}),
         layer("conv2d", second), layer("flatten"), layer("dense", {{"units", "7"}, {"activation", "relu"}}),
         layer("dense", {{"units", "3"}})}};
  };
  Device device = open_sw_emu(8);
  for (const bool relu : {false, true}) {
    SCOPED_TRACE(relu ? "the second convolution with a fused ReLU" : "the second convolution without");
    testing::CardKeepingMatmul card(device.info());
    expect_the_host_paths_bits(spec(relu), random_batch(spec(relu), 11, seed), seed, device.info(), card);
    // Without the ReLU: left, the convolution's output, the first dense
    // layer's output and both dense layers' input gradients; read, the
    // view by the first dense layer's forward and dW, its output by the
    // second's forward and dW, its masked gradient three times, and the
    // gradient's view by the convolution's dW, db and dx. With it, only
    // what lies between the dense layers.
    EXPECT_EQ(card.results_left, relu ? 2u : 4u);
    EXPECT_EQ(card.operands_read, relu ? 5u : 10u);
    EXPECT_EQ(card.views, relu ? 0u : 2u);
    EXPECT_EQ(card.masks, 1u);
  }
  // Up to the Flatten: its output is what the host asked for.
  testing::CardKeepingMatmul card(device.info());
  expect_a_partial_pass_on_the_host(spec(false), random_batch(spec(false), 11, seed), seed, 3, device.info(),
                                    card);
  EXPECT_EQ(card.views, 0u);
}

// Layers may be written in any order that names its inputs; they run in a
// topological order.
TEST(Graphs, LayersRunInATopologicalOrder) {
  ModelSpec spec{{6},
                 3,
                 {layer("dense", {{"units", "3"}, {"inputs", "join"}}),
                  layer("add", {{"name", "join"}, {"inputs", "[a, b]"}}),
                  layer("dense", {{"name", "b"}, {"units", "4"}, {"inputs", "input"}}),
                  layer("dense", {{"name", "a"}, {"units", "4"}, {"inputs", "input"}})}};
  // The last layer of the config is the output; here that is "a", which
  // feeds "join": the model must end in the layer nobody uses.
  EXPECT_EQ(Model::build(spec, 1).status().message(),
            "model.layers[0] (dense): no layer takes its output, and only the last layer's is the model's");
  std::rotate(spec.layers.begin(), spec.layers.begin() + 1, spec.layers.end());
  auto model = Model::build(spec, 1);
  ASSERT_TRUE(model.ok()) << model.status().message();
  const Batch batch = random_batch(spec, 3, 1);
  testing::ExactMatmul exact;
  EXPECT_TRUE(std::isfinite(loss(**model, exact, batch, true)));
}

TEST(Graphs, MalformedGraphsAreErrorsNamingTheLayerAndField) {
  auto error = [](std::vector<LayerConfig> layers) {
    return Model::build(ModelSpec{{4}, 2, std::move(layers)}, 1).status().message();
  };
  EXPECT_EQ(error({layer("dense", {{"name", "a"}, {"units", "2"}, {"inputs", "b"}}),
                   layer("dense", {{"name", "b"}, {"units", "2"}, {"inputs", "a"}})}),
            "model.layers: the inputs of a, b form a cycle or depend on one");
  EXPECT_EQ(error({layer("dense", {{"units", "2"}, {"inputs", "[input, densse]"}})}),
            "model.layers[0].inputs: no layer is called 'densse' (there are: dense, input)");
  EXPECT_EQ(error({layer("dense", {{"name", "x"}, {"units", "2"}}),
                   layer("dense", {{"name", "x"}, {"units", "2"}, {"inputs", "x"}})}),
            "model.layers[1].name: 'x' is taken by an earlier layer");
  EXPECT_EQ(error({layer("dense", {{"name", "input"}, {"units", "2"}, {"inputs", "input"}})}),
            "model.layers[0].name: 'input' is taken (the model's input)");
  EXPECT_EQ(error({layer("dense", {{"name", "a"}, {"units", "3"}, {"inputs", "input"}}),
                   layer("add", {{"inputs", "[a, input]"}}), layer("dense", {{"units", "2"}})}),
            "model.layers[1] (add): inputs: add takes inputs of one shape, got [3] and [4] (input 1)");
  EXPECT_EQ(error({layer("dense", {{"units", "4"}, {"inputs", "input"}}), layer("add", {{"inputs", "dense"}}),
                   layer("dense", {{"units", "2"}})}),
            "model.layers[1] (add).inputs: takes 2 or more input(s), got 1");
  EXPECT_EQ(
      error({layer("dense", {{"units", "4"}}), layer("add"), layer("dense", {{"units", "2"}})}),
      "model.layers[1] (add).inputs: takes 2 or more input(s), got 1 (a list gives each layer one; name its "
      "inputs with inputs: [...])");
  EXPECT_EQ(error({layer("dense", {{"name", "a"}, {"units", "2"}, {"inputs", "[]"}})}),
            "model.layers[0].inputs: expected one or more layer names");
}

TEST(Layers, SequenceLayerErrorsNameTheField) {
  auto error = [](std::vector<LayerConfig> layers) {
    return Model::build(ModelSpec{{12}, 3, std::move(layers)}, 1).status().message();
  };
  EXPECT_EQ(error({layer("reshape", {{"target_shape", "[5, 3]"}}), layer("dense", {{"units", "3"}})}),
            "model.layers[0] (reshape): target_shape: [5, 3] holds 15 values, the input [12] 12");
  EXPECT_EQ(
      error({layer("reshape", {{"target_shape", "[4, 3]"}}),
             layer("position_embedding", {{"sequence_length", "3"}}), layer("global_average_pooling1d")}),
      "model.layers[1] (position_embedding): sequence_length: the input has 4 positions, the table 3");
  EXPECT_EQ(error({layer("reshape", {{"target_shape", "[4, 3]"}}), layer("position_embedding"),
                   layer("global_average_pooling1d")}),
            "model.layers[1].sequence_length: required (the positions the table holds)");
  EXPECT_EQ(error({layer("global_average_pooling1d"), layer("dense", {{"units", "3"}})}),
            "model.layers[0] (global_average_pooling1d): global_average_pooling1d takes [positions, width] "
            "inputs, got [12]");
  EXPECT_EQ(error({layer("layer_normalization", {{"epsilon", "0"}}), layer("dense", {{"units", "3"}})}),
            "model.layers[0].epsilon: must be a positive number");
}

// With the causal mask, a position's output depends on no later position:
// changing the last position's input leaves the others' outputs' bits.
TEST(Layers, CausalAttentionLooksOnlyBack) {
  auto layer = make_layer({"multi_head_attention", {{"num_heads", "2"}, {"causal", "true"}}}).value();
  ParameterStore store;
  ASSERT_TRUE(layer->build({{5, 6}}, LayerSite(), store).ok());
  std::mt19937_64 rng(3);
  layer->initialize(store, rng);
  testing::ExactMatmul exact;
  LayerContext context;
  context.matmul = &exact;
  Activations input{2, {5, 6}, std::vector<float>(60), {}};
  std::mt19937 values(8);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (float& x : input.values) x = uniform(values);
  Activations before, after;
  ASSERT_TRUE(layer->forward(context, store, {&input}, before).ok());
  for (uint32_t b = 0; b < 2; ++b)
    for (uint32_t i = 0; i < 6; ++i) input.values[(b * 5 + 4) * 6 + i] += 0.5f;
  ASSERT_TRUE(layer->forward(context, store, {&input}, after).ok());
  for (uint32_t b = 0; b < 2; ++b)
    for (uint32_t p = 0; p < 5; ++p) {
      bool same = true;
      for (uint32_t i = 0; i < 6; ++i)
        same = same && before.values[(b * 5 + p) * 6 + i] == after.values[(b * 5 + p) * 6 + i];
      EXPECT_EQ(same, p < 4) << "example " << b << ", position " << p;
    }
  EXPECT_EQ(store.entries()[0].name, "0.query.weight");
  EXPECT_EQ(store.entries()[6].name, "0.output.weight");
}

// A padded text classifier: ids with 0 as padding (mask_zero), learned
// positions, masked self-attention and the masked mean. Its dense
// gradients against finite differences, and the padding's irrelevance:
// whatever row 0 of the table holds, the logits keep their bits (the
// fourth example is all padding: zeros, no NaN).
ModelSpec masked_text_model() {
  return {{6},
          3,
          {layer("embedding",
                 {{"name", "tokens"}, {"input_dim", "5"}, {"output_dim", "4"}, {"mask_zero", "true"}}),
           layer("position_embedding", {{"name", "positions"}, {"sequence_length", "6"}}),
           layer("add", {{"name", "embedded"}, {"inputs", "[tokens, positions]"}}),
           layer("multi_head_attention", {{"name", "attention"}, {"num_heads", "2"}}),
           layer("add", {{"inputs", "[embedded, attention]"}}), layer("layer_normalization"),
           layer("global_average_pooling1d"), layer("dense", {{"units", "3"}})}};
}

Batch padded_batch() {
  Batch batch;
  batch.size = 4;
  batch.inputs = {3, 1, 4, 0, 0, 0,  //
                  2, 2, 0, 0, 0, 0,  //
                  1, 2, 3, 4, 1, 2,  //
                  0, 0, 0, 0, 0, 0};
  batch.labels = {2, 0, 1, 1};
  return batch;
}

TEST(Layers, MaskedSequenceGradientsMatchFiniteDifferences) {
  const uint32_t seed = 29;
  auto model = Model::build(masked_text_model(), seed).value();
  testing::ExactMatmul exact;
  const Batch batch = padded_batch();
  loss(*model, exact, batch, true);
  const std::vector<float> analytic = model->parameters().gradients();
  check_finite_differences(
      *model, batch, model->parameters().trainable(), [&](std::size_t i) { return analytic[i]; },
      "masked text model, seed " + std::to_string(seed) + ", parameter");
}

TEST(Layers, PaddingDoesNotReachTheLogits) {
  auto model = Model::build(masked_text_model(), 5).value();
  testing::ExactMatmul exact;
  LayerContext context;
  context.matmul = &exact;
  const Batch batch = padded_batch();
  ASSERT_TRUE(model->forward(context, batch.inputs.data(), batch.size).ok());
  const std::vector<float> before = model->logits().values;
  float* padding_row = model->parameters().tables().data();  // the table's row 0
  for (uint32_t i = 0; i < 4; ++i) padding_row[i] += 3.0f * float(i + 1);
  ASSERT_TRUE(model->forward(context, batch.inputs.data(), batch.size).ok());
  const std::vector<float>& after = model->logits().values;
  for (std::size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(before[i], after[i]) << "logit " << i;
    EXPECT_TRUE(std::isfinite(after[i])) << "logit " << i;
  }
}

// A causal language model: [positions, classes] logits, a label per
// position, the padding (label 0) left out of the loss. Its gradients
// against finite differences of that loss.
TEST(Layers, SequenceOutputGradientsMatchFiniteDifferences) {
  const ModelSpec spec{
      {5},
      6,
      {layer("embedding",
             {{"name", "tokens"}, {"input_dim", "6"}, {"output_dim", "4"}, {"mask_zero", "true"}}),
       layer("position_embedding", {{"name", "positions"}, {"sequence_length", "5"}}),
       layer("add", {{"name", "embedded"}, {"inputs", "[tokens, positions]"}}),
       layer("multi_head_attention", {{"name", "attention"}, {"num_heads", "2"}, {"causal", "true"}}),
       layer("add", {{"inputs", "[embedded, attention]"}}), layer("layer_normalization"),
       layer("dense", {{"units", "6"}})}};
  const uint32_t seed = 31;
  auto model = Model::build(spec, seed).value();
  ASSERT_EQ(model->logits_shape(), (Shape{5, 6}));
  const std::vector<float> inputs = {3, 1, 4, 1, 5,  //
                                     2, 5, 3, 0, 0};
  const std::vector<float> labels = {1, 4, 1, 5, 2,  //
                                     5, 3, 1, 0, 0};
  auto loss = make_loss({"sparse_categorical_crossentropy", {{"ignore_class", "0"}}}).value();
  testing::ExactMatmul exact;
  auto mean_loss = [&](bool gradients) {
    LayerContext context;
    context.matmul = &exact;
    context.training = true;
    EXPECT_TRUE(model->forward(context, inputs.data(), 2).ok());
    std::vector<float> gradient;
    const double sum =
        loss->compute(model->logits(), labels.data(), 5, 2.0f, gradients ? &gradient : nullptr).value();
    if (gradients) {
      EXPECT_TRUE(model->backward(context, gradient).ok());
    }
    return sum / 2;
  };
  mean_loss(true);
  const std::vector<float> analytic = model->parameters().gradients();
  std::vector<float>& values = model->parameters().trainable();
  for (std::size_t i = 0; i < values.size(); ++i) {
    const float saved = values[i], h = 1e-3f;
    values[i] = saved + h;
    const double plus = mean_loss(false);
    values[i] = saved - h;
    const double minus = mean_loss(false);
    values[i] = saved;
    const double numeric = (plus - minus) / (2.0 * h);
    EXPECT_NEAR(analytic[i], numeric, 2e-3 + 2e-2 * std::fabs(numeric))
        << "seed " << seed << ", parameter " << i;
  }
}

TEST(Layers, AttentionErrorsNameTheField) {
  auto error = [](std::vector<std::pair<std::string, std::string>> fields) {
    ModelSpec spec{{12},
                   3,
                   {layer("reshape", {{"target_shape", "[2, 6]"}}), layer("multi_head_attention", fields),
                    layer("global_average_pooling1d"), layer("dense", {{"units", "3"}})}};
    return Model::build(spec, 1).status().message();
  };
  EXPECT_EQ(error({{"num_heads", "4"}}),
            "model.layers[1] (multi_head_attention): num_heads: the width 6 does not divide by 4 heads (give "
            "key_dim to choose the heads' width)");
  EXPECT_EQ(error({{"num_heads", "4"}, {"key_dim", "5"}}), "")
      << "an explicit key_dim need not divide the width";
  EXPECT_EQ(
      error({{"num_heads", "2"}, {"key_dim", "0"}}).rfind("model.layers[1].key_dim: expected a positive", 0),
      0u);
  EXPECT_EQ(error({{"key_dim", "2"}}), "model.layers[1].num_heads: required");
}

}  // namespace
}  // namespace systole
