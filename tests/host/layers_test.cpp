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
#include <tuple>

#include "common/matmul_executors.h"
#include "host/layer_models.h"
#include "systole/dot_score.h"
#include "systole/loss.h"
#include "systole/model.h"
#include "systole/numerics.h"

namespace systole {
namespace {

using namespace testing::layers;

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

// Every sum a layer's backward pass asks for (its bias's, layer
// normalisation's, the learned positions') is an fp32 sum: within fp32's
// rounding of the exact (fp64) sum of the same terms, gamma_{R+1} of their
// magnitudes, not bf16's. The gradient the store keeps is that sum, in
// every model of every layer type; a sum that rounded its terms to bf16
// first exceeds the bound on the cancelling batch below (1 + 2^-10, -1,
// -2^-10: zero in fp32).
class CheckedSums final : public MatmulExecutor {
 public:
  explicit CheckedSums(MatmulExecutor& inner) : inner_(inner) {}
  Status run(const std::vector<MatmulCall>& calls) override { return inner_.run(calls); }
  using MatmulExecutor::run;
  uint64_t launches() const override { return inner_.launches(); }
  uint32_t k_block() const override { return inner_.k_block(); }
  uint32_t k_tile() const override { return inner_.k_tile(); }
  Status sum(const SumCall& call) override {
    SYSTOLE_RETURN_IF_ERROR(inner_.sum(call));
    for (uint32_t j = 0; j < call.width; ++j) {
      double exact = 0, magnitude = 0;
      for (uint32_t r = 0; r < call.rows; ++r) {
        exact += call.x.host[std::size_t(r) * call.width + j];
        magnitude += std::fabs(call.x.host[std::size_t(r) * call.width + j]);
      }
      const double additions = call.rows + 1.0, u = 0x1p-24;
      const double bound = additions * u / (1 - additions * u) * magnitude + additions * 0x1p-126;
      EXPECT_LE(std::fabs(call.out.host[j] - exact), bound) << "sum " << sums << ", column " << j;
    }
    outputs.push_back({call.out.host, call.width});
    ++sums;
    return ok_status();
  }
  std::vector<std::pair<const float*, uint32_t>> outputs;
  uint32_t sums = 0;

 private:
  MatmulExecutor& inner_;
};

TEST(Layers, BatchSumsAreFp32WithinTheirBound) {
  Device device = open_sw_emu(8);
  uint32_t checked = 0;
  for (const Case& c : cases()) {
    const uint32_t seed = 35;
    SCOPED_TRACE(std::string(c.name) + ", seed " + std::to_string(seed));
    auto model = Model::build(c.spec, seed).value();
    auto unit = DeviceMatmul::create(device, 0, std::chrono::seconds(60)).value();
    CheckedSums sums(*unit);
    loss(*model, sums, random_batch(c.spec, 29, seed), true);
    // What each sum wrote is what the store keeps.
    ParameterStore& store = model->parameters();
    for (const auto& [out, width] : sums.outputs) {
      const float* gradients = store.gradients().data();
      ASSERT_TRUE(out >= gradients && out + width <= gradients + store.gradients().size());
    }
    checked += sums.sums;
  }
  EXPECT_GE(checked, 20u);

  // The cancelling column, 9 rows: exactly 0.
  std::vector<float> x;
  for (uint32_t r = 0; r < 3; ++r) x.insert(x.end(), {1.0f + 0x1p-10f, -1.0f, -0x1p-10f});
  float out = 1.0f;
  sum_rows(x.data(), 9, 1, 8, &out);
  EXPECT_EQ(numerics::f32_bits(out), 0u);
}

// sum_rows' order against the contract written out (NUMERICS.md,
// "Reductions"): tiles of `tile` rows from +0, then the tiles' sums from +0,
// with the GEMM's addition; bit for bit on awkward sizes, signed zeros,
// tiny and huge values, and a tile of 0 (one tile).
TEST(Layers, SumRowsFollowsTheContractsOrder) {
  const uint32_t seed = 36;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const float specials[] = {0.0f, -0.0f, 0x1p-126f, -0x1p-126f, 0x1.8p-126f, 3e38f, -3e38f, 1.0f, -1.0f};
  for (const auto [rows, width, tile] : {std::tuple{1u, 1u, 8u},
                                         {7u, 3u, 8u},
                                         {8u, 5u, 8u},
                                         {9u, 17u, 8u},
                                         {33u, 2u, 16u},
                                         {130u, 9u, 128u},
                                         {40u, 4u, 0u}}) {
    std::vector<float> x(std::size_t(rows) * width);
    for (float& v : x)
      v = rng() % 3 ? std::normal_distribution<float>(0.0f, 1.0f)(rng)
                    : specials[rng() % std::size(specials)];
    std::vector<float> got(width, 1.0f), want(width, 0.0f);
    sum_rows(x.data(), rows, width, tile, got.data());
    const uint32_t t = tile ? tile : rows;
    for (uint32_t j = 0; j < width; ++j)
      for (uint32_t first = 0; first < rows; first += t) {
        float s = 0.0f;
        for (uint32_t r = first; r < std::min(rows, first + t); ++r) s = numerics::add(s, x[r * width + j]);
        want[j] = numerics::add(want[j], s);
      }
    for (uint32_t j = 0; j < width; ++j)
      EXPECT_EQ(numerics::f32_bits(got[j]), numerics::f32_bits(want[j]))
          << rows << " x " << width << ", tile " << tile << ", column " << j;
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
  testing::CardKeepingMatmul card(device);
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
  EXPECT_EQ(card.views(), 2u);
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
