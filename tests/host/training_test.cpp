// SPDX-License-Identifier: Apache-2.0
// Training on the device (label emu): gradients against finite differences,
// one step against a plain reference of the same numerics (bit for bit),
// N replicas against one device, engines against each other.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "reference/reference.h"
#include "systole/numerics.h"
#include "systole/ranking.h"
#include "systole/trace.h"
#include "systole/trainer.h"
#include "training_models.h"

namespace systole {
namespace {

using namespace testing::training;

// The store's Linear tensors (weight [out, in]) in MlpShape's flat layout;
// `gradients` takes the gradients instead of the values.
std::vector<float> flatten_dense(const ParameterStore& store, const MlpShape& shape, bool gradients = false) {
  const std::vector<uint32_t> widths = shape.widths();
  std::vector<float> flat;
  auto& all = const_cast<ParameterStore&>(store);
  for (uint32_t l = 0; l < shape.layers(); ++l) {
    const uint32_t in = widths[l], out = widths[l + 1];
    const auto index = [&](const std::string& name) {
      return std::size_t(store.find(name) - store.entries().data());
    };
    const std::size_t w = index(std::to_string(2 * l) + ".weight"),
                      b = index(std::to_string(2 * l) + ".bias");
    const float* weight = gradients ? all.gradient(w) : store.values(w);
    const float* bias = gradients ? all.gradient(b) : store.values(b);
    for (uint32_t i = 0; i < in; ++i)
      for (uint32_t o = 0; o < out; ++o) flat.push_back(weight[std::size_t(o) * in + i]);
    flat.insert(flat.end(), bias, bias + out);
  }
  return flat;
}

// One forward and backward pass of `model` on the device: the gradient of
// (sum of the losses) / divisor lands in the store.
StepResult device_step(Model& model, Device device, const Dataset& data, float divisor) {
  auto matmul = DeviceMatmul::create(device, 0, std::chrono::seconds(60)).value();
  LayerContext context;
  context.matmul = matmul.get();
  context.training = true;
  EXPECT_TRUE(model.forward(context, data.values.data(), data.examples).ok());
  std::vector<float> logits_gradient;
  StepResult result;
  result.loss_sum = make_loss({"sparse_categorical_crossentropy", {}})
                        .value()
                        ->compute(model.logits(), data.labels.data(), 1, divisor, &logits_gradient)
                        .value();
  EXPECT_TRUE(model.backward(context, logits_gradient).ok());
  return result;
}

// ---------------------------------------------------------------------------
// (a) The math: a double-precision MLP, checked by finite differences; the
// device's gradients must agree with it to bf16 precision.

double reference_loss(const MlpShape& shape, const std::vector<double>& flat, const Dataset& data,
                      std::vector<double>* gradients) {
  const std::vector<uint32_t> widths = shape.widths();
  const uint32_t layers = shape.layers(), n = data.examples;
  std::vector<std::vector<double>> acts(layers + 1);
  acts[0].assign(data.values.begin(), data.values.end());
  std::vector<std::size_t> offset(layers);
  std::size_t at = 0;
  for (uint32_t l = 0; l < layers; ++l) {
    offset[l] = at;
    const uint32_t in = widths[l], out = widths[l + 1];
    at += std::size_t(in) * out + out;
    acts[l + 1].assign(std::size_t(n) * out, 0.0);
    for (uint32_t e = 0; e < n; ++e)
      for (uint32_t o = 0; o < out; ++o) {
        double z = flat[offset[l] + std::size_t(in) * out + o];
        for (uint32_t i = 0; i < in; ++i)
          z += acts[l][std::size_t(e) * in + i] * flat[offset[l] + std::size_t(i) * out + o];
        acts[l + 1][std::size_t(e) * out + o] = (l + 1 < layers) ? std::max(z, 0.0) : z;
      }
  }
  const uint32_t classes = shape.outputs;
  double loss = 0;
  std::vector<double> delta(std::size_t(n) * classes);
  for (uint32_t e = 0; e < n; ++e) {
    const double* z = &acts[layers][std::size_t(e) * classes];
    const double top = *std::max_element(z, z + classes);
    double total = 0;
    for (uint32_t c = 0; c < classes; ++c) total += std::exp(z[c] - top);
    const double log_sum = top + std::log(total);
    loss += (log_sum - z[uint32_t(data.labels[e])]) / n;
    for (uint32_t c = 0; c < classes; ++c)
      delta[std::size_t(e) * classes + c] = (std::exp(z[c] - log_sum) - (c == uint32_t(data.labels[e]))) / n;
  }
  if (!gradients) return loss;
  gradients->assign(flat.size(), 0.0);
  for (uint32_t l = layers; l-- > 0;) {
    const uint32_t in = widths[l], out = widths[l + 1];
    std::vector<double> below(std::size_t(n) * in, 0.0);
    for (uint32_t e = 0; e < n; ++e)
      for (uint32_t o = 0; o < out; ++o) {
        const double d = delta[std::size_t(e) * out + o];
        (*gradients)[offset[l] + std::size_t(in) * out + o] += d;
        for (uint32_t i = 0; i < in; ++i) {
          (*gradients)[offset[l] + std::size_t(i) * out + o] += acts[l][std::size_t(e) * in + i] * d;
          below[std::size_t(e) * in + i] += flat[offset[l] + std::size_t(i) * out + o] * d;
        }
      }
    for (std::size_t i = 0; i < below.size(); ++i) below[i] = acts[l][i] > 0 ? below[i] : 0.0;
    delta = below;
  }
  return loss;
}

TEST(Training, GradientsMatchFiniteDifferencesAndTheDevice) {
  const uint32_t seed = 5;
  const MlpShape shape = small_shape();
  const Dataset data = synthetic(32, seed);
  auto model = Model::build(shape.spec(), seed).value();
  const std::vector<float> flat32 = flatten_dense(model->parameters(), shape);
  const std::vector<double> flat(flat32.begin(), flat32.end());
  std::vector<double> analytic;
  reference_loss(shape, flat, data, &analytic);
  // The reference's backward pass against central differences.
  for (std::size_t i = 0; i < flat.size(); i += 7) {
    std::vector<double> plus = flat, minus = flat;
    plus[i] += 1e-6;
    minus[i] -= 1e-6;
    const double numeric =
        (reference_loss(shape, plus, data, nullptr) - reference_loss(shape, minus, data, nullptr)) / 2e-6;
    EXPECT_NEAR(analytic[i], numeric, 1e-6 + 1e-4 * std::fabs(numeric)) << "parameter " << i;
  }
  // The device: bf16 operands, so agreement to bf16 precision.
  const StepResult result = device_step(*model, open_device(1), data, float(data.examples));
  const std::vector<float> gradients = flatten_dense(model->parameters(), shape, true);
  double error = 0, norm = 0;
  for (std::size_t i = 0; i < flat.size(); ++i) {
    error += (gradients[i] - analytic[i]) * (gradients[i] - analytic[i]);
    norm += analytic[i] * analytic[i];
  }
  EXPECT_LT(std::sqrt(error / norm), 2e-2) << "seed " << seed;
  EXPECT_NEAR(result.loss_sum / data.examples, reference_loss(shape, flat, data, nullptr), 2e-2);
}

// ---------------------------------------------------------------------------
// (b) The same step written plainly on tests/reference GEMMs, bit for bit.

// C = A B (+ bias) (ReLU) through reference::gemm, with `rows` PE rows.
std::vector<uint32_t> ref_gemm(const std::vector<uint16_t>& a, const std::vector<uint16_t>& b, uint32_t m,
                               uint32_t k, uint32_t n, const float* bias, bool relu, bool bf16_out) {
  std::vector<uint8_t> memory(a.size() * 2 + b.size() * 2 + n * 4 + std::size_t(m) * n * 4);
  std::memcpy(memory.data(), a.data(), a.size() * 2);
  std::memcpy(memory.data() + a.size() * 2, b.data(), b.size() * 2);
  spec::GemmDescriptor d{};
  d.m = m;
  d.n = n;
  d.k = k;
  d.lda = k;
  d.ldb = n;
  d.ldc = n;
  d.a_addr = 0;
  d.b_addr = a.size() * 2;
  d.bias_addr = d.b_addr + b.size() * 2;
  d.c_addr = d.bias_addr + n * 4;
  if (bias) {
    std::memcpy(memory.data() + d.bias_addr, bias, n * 4);
    d.flags |= spec::flag::kBias;
  }
  if (relu) d.flags |= spec::flag::kRelu;
  if (bf16_out) d.flags |= spec::flag::kOutputBf16;
  reference::gemm(d, kArray, memory);
  std::vector<uint32_t> out(std::size_t(m) * n);
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (bf16_out) {
      uint16_t v;
      std::memcpy(&v, memory.data() + d.c_addr + i * 2, 2);
      out[i] = v;
    } else {
      std::memcpy(&out[i], memory.data() + d.c_addr + i * 4, 4);
    }
  }
  return out;
}

std::vector<uint16_t> to_bf16(const std::vector<float>& values) {
  std::vector<uint16_t> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i)
    out[i] = reference::f32_to_bf16(numerics::f32_bits(values[i]));
  return out;
}

std::vector<float> reference_gradients(const MlpShape& shape, const std::vector<float>& flat,
                                       const Dataset& data, float divisor) {
  const std::vector<uint32_t> widths = shape.widths();
  const uint32_t layers = shape.layers(), n = data.examples;
  std::vector<std::vector<uint16_t>> w(layers), wt(layers), acts(layers);
  std::vector<std::vector<float>> bias(layers);
  std::vector<std::size_t> offset(layers);
  std::size_t at = 0;
  for (uint32_t l = 0; l < layers; ++l) {
    const uint32_t in = widths[l], out = widths[l + 1];
    offset[l] = at;
    w[l] = to_bf16(std::vector<float>(flat.begin() + at, flat.begin() + at + std::size_t(in) * out));
    wt[l].resize(w[l].size());
    for (uint32_t i = 0; i < in; ++i)
      for (uint32_t o = 0; o < out; ++o) wt[l][std::size_t(o) * in + i] = w[l][std::size_t(i) * out + o];
    at += std::size_t(in) * out;
    bias[l].assign(flat.begin() + at, flat.begin() + at + out);
    at += out;
  }
  acts[0] = to_bf16(data.values);
  std::vector<uint32_t> logits;
  for (uint32_t l = 0; l < layers; ++l) {
    const bool top = l + 1 == layers;
    const auto z = ref_gemm(acts[l], w[l], n, widths[l], widths[l + 1], bias[l].data(), !top, !top);
    if (top)
      logits = z;
    else
      acts[l + 1].assign(z.begin(), z.end());
  }
  const uint32_t classes = shape.outputs;
  std::vector<float> delta(std::size_t(n) * classes);
  for (uint32_t e = 0; e < n; ++e) {
    double z[16], top = -1e300, total = 0;
    for (uint32_t c = 0; c < classes; ++c) {
      z[c] = numerics::f32_from_bits(logits[std::size_t(e) * classes + c]);
      top = std::max(top, z[c]);
    }
    for (uint32_t c = 0; c < classes; ++c) total += std::exp(z[c] - top);
    const double log_sum = top + std::log(total);
    for (uint32_t c = 0; c < classes; ++c)
      delta[std::size_t(e) * classes + c] =
          float((std::exp(z[c] - log_sum) - (c == data.labels[e] ? 1.0 : 0.0)) / divisor);
  }
  std::vector<float> gradients(flat.size());
  for (uint32_t l = layers; l-- > 0;) {
    const uint32_t in = widths[l], out = widths[l + 1];
    const std::vector<uint16_t> dz = to_bf16(delta);
    std::vector<uint16_t> a_t(std::size_t(in) * n);
    for (uint32_t e = 0; e < n; ++e)
      for (uint32_t i = 0; i < in; ++i) a_t[std::size_t(i) * n + e] = acts[l][std::size_t(e) * in + i];
    const auto dw = ref_gemm(a_t, dz, in, n, out, nullptr, false, false);
    // db: delta's fp32 columns (not rounded to bf16) summed from +0 in
    // tiles of the array's rows, the tiles' sums then from +0 in order.
    std::vector<float> db(out, 0.0f);
    for (uint32_t t = 0; t < n; t += kArray) {
      std::vector<float> tile(out, 0.0f);
      for (uint32_t e = t; e < std::min(n, t + kArray); ++e)
        for (uint32_t j = 0; j < out; ++j) tile[j] = numerics::add(tile[j], delta[std::size_t(e) * out + j]);
      for (uint32_t j = 0; j < out; ++j) db[j] = numerics::add(db[j], tile[j]);
    }
    std::memcpy(gradients.data() + offset[l], dw.data(), dw.size() * 4);
    std::memcpy(gradients.data() + offset[l] + dw.size(), db.data(), db.size() * 4);
    if (l > 0) {
      const auto da = ref_gemm(dz, wt[l], n, out, in, nullptr, false, false);
      delta.resize(da.size());
      for (std::size_t i = 0; i < da.size(); ++i)
        delta[i] = numerics::bf16_to_f32(acts[l][i]) > 0 ? numerics::f32_from_bits(da[i]) : 0.0f;
    }
  }
  return gradients;
}

TEST(Training, OneStepEqualsAPlainReferenceToTheBit) {
  const uint32_t seed = 9;
  const MlpShape shape = small_shape();
  const Dataset data = synthetic(40, seed);  // K = 40: three K tiles, the last partial
  auto model = Model::build(shape.spec(), seed).value();
  const std::vector<float> flat = flatten_dense(model->parameters(), shape);
  const std::vector<float> expected = reference_gradients(shape, flat, data, 64.0f);

  device_step(*model, open_device(1), data, 64.0f);
  const std::vector<float> gradients = flatten_dense(model->parameters(), shape, true);
  ASSERT_EQ(gradients.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i)
    ASSERT_EQ(numerics::f32_bits(gradients[i]), numerics::f32_bits(expected[i]))
        << "seed " << seed << ", gradient " << i;

  // And the Adam update, written plainly (fp32, Keras' float betas and its
  // step size with the bias corrections), over the store's trainable values
  // in its order.
  ParameterStore& store = model->parameters();
  const std::vector<float> before = store.trainable();
  const std::vector<float> stored_gradients = store.gradients();
  auto adam = make_optimizer(OptimizerConfig{}, store).value();
  adam->apply(store);
  const float b1 = 0.9f, b2 = 0.999f;
  const float alpha = float(0.001f * std::sqrt(1.0 - double(b2)) / (1.0 - double(b1)));
  for (std::size_t i = 0; i < before.size(); ++i) {
    const float g = stored_gradients[i];
    const float m = (1.0f - b1) * g, v = (1.0f - b2) * g * g;
    const float plain = before[i] - alpha * m / (std::sqrt(v) + 1e-7f);
    ASSERT_EQ(numerics::f32_bits(store.trainable()[i]), numerics::f32_bits(plain)) << "parameter " << i;
  }
}

// ---------------------------------------------------------------------------
// (c) Replicas against one device.

std::vector<float> train_steps(const std::vector<uint32_t>& units, uint32_t global_batch, const Dataset& data,
                               uint32_t steps, EmuEngine engine = EmuEngine::kFast,
                               const ModelSpec& spec = small_shape().spec()) {
  Device device = open_device(uint32_t(units.size()), engine);
  TrainerConfig config;
  config.model = spec;
  config.global_batch = global_batch;
  config.seed = 3;
  auto trainer = Trainer::create(device, units, config).value();
  for (uint32_t s = 0; s < steps; ++s) {
    const Dataset slice = data.slice(s * global_batch, global_batch);
    auto result = trainer->step(whole(slice));
    EXPECT_TRUE(result.ok()) << result.status().to_string();
    EXPECT_TRUE(trainer->replicas_identical().value()) << "after step " << s;
  }
  return trainer->parameters().trainable();
}

TEST(Training, ReplicasOfOneTileEachEqualOneDeviceToTheBit) {
  // Each replica's batch is one K tile (16 examples on a 16x16 array), so
  // its partial dW is the tile sum S_r (a column chain from +0, never -0).
  // The all-reduce adds ((S_0 + S_1) + S_2) + ..., the one device
  // ((+0 + S_0) + S_1) + ...: the same bits.
  const Dataset data = synthetic(3 * 64, 11);
  const std::vector<float> one = train_steps({0}, 32, data, 3);
  const std::vector<float> two = train_steps({0, 1}, 32, data, 3);
  ASSERT_EQ(std::memcmp(one.data(), two.data(), one.size() * 4), 0) << "2 replicas";
  const std::vector<float> one64 = train_steps({0}, 64, data, 3);
  const std::vector<float> four = train_steps({0, 1, 2, 3}, 64, data, 3);
  ASSERT_EQ(std::memcmp(one64.data(), four.data(), one64.size() * 4), 0) << "4 replicas";
}

// A graph whose hidden output feeds two layers (its gradient a sum of two)
// trains on replicas of one tile each to the bits of one device.
TEST(Training, AGraphModelsReplicasEqualOneDeviceToTheBit) {
  ModelSpec residual = small_shape().spec();
  residual.layers = {{"dense", {{"name", "d1"}, {"units", "12"}, {"activation", "relu"}}},
                     {"dense", {{"name", "d2"}, {"units", "12"}, {"inputs", "d1"}}},
                     {"add", {{"inputs", "[d2, d1]"}}},
                     {"dense", {{"units", "3"}, {"inputs", "add"}}}};
  const Dataset data = synthetic(3 * 32, 14);
  const std::vector<float> one = train_steps({0}, 32, data, 3, EmuEngine::kFast, residual);
  const std::vector<float> two = train_steps({0, 1}, 32, data, 3, EmuEngine::kFast, residual);
  ASSERT_EQ(one.size(), 12u * 20 + 12 + 12 * 12 + 12 + 3 * 12 + 3);
  ASSERT_EQ(std::memcmp(one.data(), two.data(), one.size() * 4), 0) << "2 replicas";
}

// The block trains on replicas of one tile each to the bits of one device:
// a replica's 4 examples of 4 positions are 16 rows, one K tile of the
// weight gradients' products and of the biases' and normalisation's sums
// (a replica of more rows chains several tiles, which one device groups
// differently: equal only to rounding, as for any model). The head after
// the pooling has one row per example, 4 a replica where one device sums 8
// in one tile: it has no bias here, whose fp32 sum would group
// differently (its weight gradient's products of bf16 operands happen to
// sum exactly).
ModelSpec without_head_bias(ModelSpec spec) {
  spec.layers.back().fields.push_back({"use_bias", "false"});
  return spec;
}

TEST(Training, ATransformerBlocksReplicasEqualOneDeviceToTheBit) {
  const ModelSpec block = without_head_bias(transformer_block());
  const Dataset data = synthetic(3 * 8, 15);
  const std::vector<float> one = train_steps({0}, 8, data, 3, EmuEngine::kFast, block);
  const std::vector<float> two = train_steps({0, 1}, 8, data, 3, EmuEngine::kFast, block);
  ASSERT_EQ(std::memcmp(one.data(), two.data(), one.size() * 4), 0) << "2 replicas";
}

// The same for a padded text model: ids with 0 as padding (mask_zero),
// learned positions, causal attention with the padding mask, the masked
// mean. The padding mask changes which keys a softmax sees, not the order
// of any sum, so replicas of one tile still give one device's bits (the
// learned positions' sum tiles 4 examples of 4 positions; the head again
// without a bias).
TEST(Training, AMaskedTextTransformersReplicasEqualOneDeviceToTheBit) {
  ModelSpec text;
  text.input_shape = {4};
  text.classes = 3;
  text.layers = {
      {"embedding", {{"name", "tokens"}, {"input_dim", "7"}, {"output_dim", "8"}, {"mask_zero", "true"}}},
      {"position_embedding", {{"name", "positions"}, {"sequence_length", "4"}}},
      {"add", {{"name", "embedded"}, {"inputs", "[tokens, positions]"}}},
      {"multi_head_attention", {{"name", "attention"}, {"num_heads", "2"}, {"causal", "true"}}},
      {"add", {{"inputs", "[embedded, attention]"}}},
      {"layer_normalization", {}},
      {"global_average_pooling1d", {}},
      {"dense", {{"units", "3"}, {"use_bias", "false"}}}};
  Dataset data;
  data.examples = 3 * 8;
  data.features = 4;
  data.shape = {4};
  data.classes = 3;
  std::mt19937 rng(16);
  for (uint32_t e = 0; e < data.examples; ++e) {
    const uint32_t length = 1 + rng() % 4;  // 1 to 4 tokens, then padding
    for (uint32_t p = 0; p < 4; ++p) data.values.push_back(p < length ? float(1 + rng() % 6) : 0.0f);
    data.labels.push_back(float(rng() % 3));
  }
  const std::vector<float> one = train_steps({0}, 8, data, 3, EmuEngine::kFast, text);
  const std::vector<float> two = train_steps({0, 1}, 8, data, 3, EmuEngine::kFast, text);
  ASSERT_EQ(std::memcmp(one.data(), two.data(), one.size() * 4), 0) << "2 replicas";
}

TEST(Training, ReplicasOfPartTilesMatchOneDeviceToRounding) {
  // Four replicas of 8 examples: the device sums 16 examples per tile in
  // its column chain, the replicas 8 each; the groupings differ, so only
  // agreement to fp32 rounding is promised (these small synthetic sums
  // happen to be exact).
  const Dataset data = synthetic(3 * 32, 12);
  const std::vector<float> one = train_steps({0}, 32, data, 3);
  const std::vector<float> four = train_steps({0, 1, 2, 3}, 32, data, 3);
  double worst = 0;
  for (std::size_t i = 0; i < one.size(); ++i)
    worst = std::max(worst, double(std::fabs(one[i] - four[i])) / (std::fabs(one[i]) + 1e-3));
  EXPECT_LT(worst, 1e-3);
}

TEST(Training, TheHlsKernelTrainsLikeTheFastPath) {
  const Dataset data = synthetic(2 * 32, 13);
  const std::vector<float> fast = train_steps({0, 1}, 32, data, 2, EmuEngine::kFast);
  const std::vector<float> hls = train_steps({0, 1}, 32, data, 2, EmuEngine::kHls);
  ASSERT_EQ(std::memcmp(fast.data(), hls.data(), fast.size() * 4), 0);
}

// Two replicas on one compute unit would race for its buffers.
TEST(Training, AUnitGivenTwiceIsRefused) {
  Device device = open_device(2, EmuEngine::kFast);
  TrainerConfig config;
  config.model = small_shape().spec();
  config.global_batch = 32;
  const Status status = Trainer::create(device, {1, 0, 1}, config).status();
  EXPECT_EQ(status.message(), "devices: compute unit 1 is given twice (replica 0 and 2)");
}

TEST(Training, AGlobalBatchThatDoesNotDivideFailsBeforeStepZero) {
  Device device = open_device(3);
  TrainerConfig config;
  config.model = small_shape().spec();
  config.global_batch = 32;
  auto trainer = Trainer::create(device, {0, 1, 2}, config);
  ASSERT_FALSE(trainer.ok());
  EXPECT_NE(trainer.status().message().find("global_batch 32 does not divide evenly over 3 replicas"),
            std::string::npos);
}

TEST(Training, LossFallsAndAccuracyRises) {
  const Dataset data = synthetic(64 * 40, 17);
  Device device = open_device(2);
  TrainerConfig config;
  config.model = small_shape().spec();
  config.global_batch = 64;
  config.optimizer.learning_rate = 1e-2f;
  auto trainer = Trainer::create(device, {0, 1}, config).value();
  const StepResult before = trainer->evaluate(data).value();
  for (uint32_t s = 0; s < 40; ++s) ASSERT_TRUE(trainer->step(whole(data.slice(s * 64, 64))).ok());
  const StepResult after = trainer->evaluate(data).value();
  EXPECT_LT(after.loss_sum, 0.6 * before.loss_sum);
  EXPECT_EQ(trainer->results(after)[1].first, "accuracy");
  EXPECT_GT(trainer->results(after)[1].second, 0.8);
}

std::vector<float> train_cnn(const std::vector<uint32_t>& units, bool sync, const Dataset& data,
                             uint32_t steps, std::vector<float>* buffers = nullptr) {
  Device device = open_device(uint32_t(units.size()));
  TrainerConfig config;
  config.model = cnn_spec(sync);
  config.global_batch = 32;
  config.seed = 4;
  auto trainer = Trainer::create(device, units, config).value();
  for (uint32_t s = 0; s < steps; ++s) {
    auto result = trainer->step(whole(data.slice(s * 32, 32)));
    EXPECT_TRUE(result.ok()) << result.status().to_string();
    EXPECT_TRUE(trainer->replicas_identical().value()) << "after step " << s;
  }
  if (buffers) *buffers = trainer->parameters().buffers();
  return trainer->parameters().trainable();
}

TEST(Training, ACnnWithSyncBatchNormOnReplicasMatchesOneDeviceToRounding) {
  // Synchronised moments make two replicas normalise like one device, but
  // the moments are summed per replica and then across (fp32 all-reduce),
  // and the convolution's weight gradient sums each replica's 16 x 20
  // positions before the all-reduce adds them: other groupings than one
  // device's single K chain, so agreement is to rounding, not to the bit.
  const Dataset data = synthetic(3 * 32, 14);
  std::vector<float> one_buffers, two_buffers;
  // The convolution's bias is left out: batch normalisation subtracts the
  // batch mean right after it, so its gradient is zero but for fp32
  // rounding, which differs with the grouping, and Adam scales any nonzero
  // gradient to a step of about the learning rate.
  const std::vector<float> one = train_cnn({0}, true, data, 3, &one_buffers);
  const std::vector<float> two = train_cnn({0, 1}, true, data, 3, &two_buffers);
  auto model = Model::build(cnn_spec(true), 4).value();
  const ParameterStore::Entry* conv_bias = model->parameters().find("0.bias");
  ASSERT_NE(conv_bias, nullptr);
  ASSERT_EQ(conv_bias->size, 6u);
  double worst = 0;
  for (std::size_t i = 0; i < one.size(); ++i)
    if (i < conv_bias->offset || i >= conv_bias->offset + conv_bias->size)
      worst = std::max(worst, double(std::fabs(one[i] - two[i])) / (std::fabs(one[i]) + 1e-2));
  EXPECT_LT(worst, 1e-3);
  ASSERT_EQ(one_buffers.size(), two_buffers.size());
  for (std::size_t i = 0; i < one_buffers.size(); ++i) EXPECT_NEAR(one_buffers[i], two_buffers[i], 1e-4) << i;
}

TEST(Training, PerReplicaBatchNormKeepsReplicasIdenticalButDiffersFromSync) {
  // Each replica normalises with its own 16 examples; the moving
  // statistics take the replicas' mean, so the replicas still hold the
  // same bits (train_cnn checks after every step), and the model differs
  // from the synchronised one.
  const Dataset data = synthetic(2 * 32, 15);
  const std::vector<float> local = train_cnn({0, 1}, false, data, 2);
  const std::vector<float> sync = train_cnn({0, 1}, true, data, 2);
  EXPECT_NE(std::memcmp(local.data(), sync.data(), local.size() * 4), 0);
}

// ---------------------------------------------------------------------------
// Two-tower models over embeddings: (user, item) id pairs whose labels come
// from planted latent factors (label 1 when the factors' dot product is
// positive), so a model that learns the factors ranks held-out pairs well.

Dataset planted_pairs(uint32_t examples, uint32_t seed, uint32_t users = 40, uint32_t items = 30) {
  std::mt19937 factors_rng(1234);  // the same factors for every split
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> u(users * 3), v(items * 3);
  for (float& x : u) x = normal(factors_rng);
  for (float& x : v) x = normal(factors_rng);
  std::mt19937 rng(seed);
  Dataset data;
  data.examples = examples;
  data.features = 2;
  data.shape = {2};
  data.classes = 2;
  for (uint32_t e = 0; e < examples; ++e) {
    const uint32_t user = rng() % users, item = rng() % items;
    float dot = 0;
    for (int j = 0; j < 3; ++j) dot += u[user * 3 + j] * v[item * 3 + j];
    data.values.insert(data.values.end(), {float(user), float(item)});
    data.labels.push_back(dot > 0 ? 1 : 0);
  }
  return data;
}

ModelSpec two_tower_spec(bool dot_bias = true) {
  ModelSpec spec;
  spec.input_shape = {2};
  spec.classes = 2;
  spec.layers = {{"embedding", {{"input_dim", "[40, 30]"}, {"output_dim", "8"}}},
                 {"dense", {{"units", "16"}, {"activation", "relu"}}},
                 {"dense", {{"units", "8"}}},
                 {"dot", {{"use_bias", dot_bias ? "true" : "false"}}}};
  return spec;
}

std::unique_ptr<Trainer> train_two_tower(const std::vector<uint32_t>& units, const Dataset& data,
                                         uint32_t global_batch, uint32_t epochs, bool dot_bias = true) {
  Device device = open_device(uint32_t(units.size()));
  TrainerConfig config;
  config.model = two_tower_spec(dot_bias);
  config.global_batch = global_batch;
  config.seed = 6;
  config.optimizer.learning_rate = 0.01f;
  config.optimizer.embedding_learning_rate = 0.2f;
  auto trainer = Trainer::create(device, units, config).value();
  for (uint32_t epoch = 0; epoch < epochs; ++epoch)
    for (uint32_t at = 0; at + global_batch <= data.examples; at += global_batch) {
      auto result = trainer->step(whole(data.slice(at, global_batch)));
      EXPECT_TRUE(result.ok()) << result.status().to_string();
      if (!result.ok()) return trainer;
    }
  EXPECT_TRUE(trainer->replicas_identical().value());
  return trainer;
}

TEST(Training, TwoTowerReplicasEqualOneDeviceToTheBit) {
  // 8 examples per replica are 16 tower rows: one K tile of the 16x16
  // array for the dense layers' weight gradients; the embedding rows sum
  // their uses in example order, replica by replica, then in replica order:
  // the one device's order. The sparse all-reduce must not change a bit.
  // Without the score's global bias: its gradient is a host sum over a
  // replica's examples, which the all-reduce then adds across replicas, a
  // grouping one device's sum over all examples does not share (equal to
  // rounding, not to the bit).
  const Dataset data = planted_pairs(5 * 16, 3);
  auto one = train_two_tower({0}, data, 16, 1, /*dot_bias=*/false);
  auto two = train_two_tower({0, 1}, data, 16, 1, /*dot_bias=*/false);
  const ParameterStore &a = one->parameters(), &b = two->parameters();
  ASSERT_EQ(a.tables().size(), 8u * 70);
  EXPECT_EQ(std::memcmp(a.trainable().data(), b.trainable().data(), a.trainable().size() * 4), 0);
  EXPECT_EQ(std::memcmp(a.tables().data(), b.tables().data(), a.tables().size() * 4), 0);
  // Rows no example used keep their initial values: train on user 0 alone.
  Dataset only_user_0 = planted_pairs(32, 5);
  for (uint32_t e = 0; e < 32; ++e) only_user_0.values[2 * e] = 0;
  auto trained = train_two_tower({0, 1}, only_user_0, 16, 1);
  auto fresh = Model::build(two_tower_spec(), 6).value();
  const float* table = trained->parameters().tables().data();
  const float* initial = fresh->parameters().tables().data();
  EXPECT_NE(std::memcmp(table, initial, 8 * 4), 0) << "user 0's row was trained";
  EXPECT_EQ(std::memcmp(table + 8, initial + 8, 39 * 8 * 4), 0) << "users 1..39 were not used";
}

TEST(Training, TwoTowerLearnsPlantedFactors) {
  const Dataset train = planted_pairs(2048, 8), test = planted_pairs(512, 9);
  auto trainer = train_two_tower({0, 1}, train, 64, 30);
  auto logits = trainer->predict(test.values.data(), test.examples);
  ASSERT_TRUE(logits.ok());
  std::vector<float> scores;
  for (uint32_t e = 0; e < test.examples; ++e) scores.push_back((*logits)[2 * e + 1] - (*logits)[2 * e]);
  const double auc = roc_auc(scores, test.labels);
  std::printf("two-tower AUC on held-out pairs of planted factors: %.4f\n", auc);
  EXPECT_GT(auc, 0.9);
}

// The small model on two replicas (units 0 and 1), a global batch of 64.
std::unique_ptr<Trainer> small_trainer_on_two_units() {
  TrainerConfig config;
  config.model = small_shape().spec();
  config.global_batch = 64;
  return Trainer::create(open_device(2), {0, 1}, config).value();
}

// A traced step: every replica's phases on its own track, every launch on
// its unit's track with the kernel's counters, valid trace-event JSON.
TEST(Training, ATraceHoldsEveryPhaseAndLaunch) {
  const Dataset data = synthetic(64, 3);
  auto trainer = small_trainer_on_two_units();
  Trace trace;
  Trace::install(&trace);
  ASSERT_TRUE(trainer->step(whole(data)).ok());
  Trace::install(nullptr);
  ASSERT_TRUE(trainer->step(whole(data)).ok());  // not traced
  const std::string path = ::testing::TempDir() + "/step_trace.json";
  ASSERT_TRUE(trace.write(path).ok());
  std::ifstream in(path);
  const nlohmann::json document = nlohmann::json::parse(in);
  std::map<std::pair<std::string, uint32_t>, uint32_t> spans;  // (name, track) -> count
  std::map<uint32_t, std::string> track_names;
  double busy = 0, dma = 0;
  for (const nlohmann::json& event : document.at("traceEvents")) {
    if (event.at("ph") == "M") {
      if (event.at("name") == "thread_name") track_names[event.at("tid")] = event.at("args").at("name");
      continue;
    }
    ASSERT_EQ(event.at("ph"), "X");
    EXPECT_GE(event.at("ts").get<double>(), 0.0);
    EXPECT_GE(event.at("dur").get<double>(), 0.0);
    ++spans[{event.at("name"), event.at("tid")}];
    if (event.at("name") == "launch") {
      busy += event.at("args").at("busy_cycles").get<double>();
      dma += event.at("args").at("dma_read_bytes").get<double>();
      EXPECT_GT(event.at("args").at("descriptors").get<double>(), 0.0);
    }
  }
  for (uint32_t r = 0; r < 2; ++r) {
    for (const char* phase : {"forward", "backward", "all-reduce", "optimizer"})
      EXPECT_EQ((spans[{phase, Trace::replica_track(r)}]), 1u) << phase << " of replica " << r;
    // Every launch of the traced step (the untraced one made as many).
    EXPECT_EQ((spans[{"launch", Trace::unit_track(r)}]), trainer->launches() / 2) << "unit " << r;
    EXPECT_EQ(track_names[Trace::unit_track(r)], "device: compute unit " + std::to_string(r));
    EXPECT_EQ(track_names[Trace::replica_track(r)], "host: replica " + std::to_string(r));
  }
  EXPECT_GT(busy, 0.0);
  EXPECT_GT(dma, 0.0);
}

// The breakdown of a step's time: every part counted for every step, the
// device's part inside the passes, and since() the later steps only.
TEST(Training, StepTimesAccountForEachPart) {
  const Dataset data = synthetic(64, 3);
  auto trainer = small_trainer_on_two_units();
  const auto begun = std::chrono::steady_clock::now();
  ASSERT_TRUE(trainer->step(whole(data)).ok());
  const StepTimes first = trainer->step_times();
  ASSERT_TRUE(trainer->step(whole(data)).ok());
  ASSERT_TRUE(trainer->step(whole(data)).ok());
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - begun).count();
  const StepTimes all = trainer->step_times();
  EXPECT_EQ(first.steps, 1u);
  EXPECT_EQ(all.steps, 3u);
  for (const StepTimes& t : {first, all}) {
    EXPECT_GT(t.device.launch_seconds, 0.0);
    EXPECT_GT(t.device.staging_seconds, 0.0);
    EXPECT_GE(t.host_layers(), 0.0) << "the device's time lies inside the passes";
    EXPECT_GT(t.all_reduce, 0.0);
    EXPECT_GT(t.optimizer, 0.0);
  }
  EXPECT_LE(all.forward + all.backward + all.all_reduce + all.optimizer, elapsed);
  const StepTimes later = all.since(first);
  EXPECT_EQ(later.steps, 2u);
  EXPECT_DOUBLE_EQ(later.forward, all.forward - first.forward);
  EXPECT_DOUBLE_EQ(later.device.launch_seconds, all.device.launch_seconds - first.device.launch_seconds);
  EXPECT_DOUBLE_EQ(later.optimizer, all.optimizer - first.optimizer);
}

}  // namespace
}  // namespace systole
