// SPDX-License-Identifier: Apache-2.0
// Models as graphs (label emu): a chain written as a graph is the list's
// model to the bit; activations, a convolution's output through a Flatten
// and their gradients stay on the card where an executor keeps them, with
// the host path's bits; layers written in any order run in a topological
// one; and malformed graphs are errors naming the layer and the field.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/matmul_executors.h"
#include "host/layer_models.h"
#include "systole/model.h"

namespace systole {
namespace {

using namespace testing::layers;

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
  testing::CardKeepingMatmul card(device);
  expect_the_host_paths_bits(spec, batch, seed, device.info(), card);
  // Left: d1's output (forward) and its gradient (d2's dx); read: d1's
  // output by d2 (forward, and dW in backward), the masked gradient by d1's
  // dW; summed: the masked gradient, d1's db.
  EXPECT_EQ(card.results_left, 2u);
  EXPECT_EQ(card.operands_read, 3u);
  EXPECT_EQ(card.sums_read, 1u);
  EXPECT_EQ(card.masks, 1u);

  // The first layer alone: its output is what the host asked for.
  expect_a_partial_pass_on_the_host(spec, batch, seed, 1, device.info(), card);
  EXPECT_EQ(card.results_left, 2u);

  // A list of dense layers keeps every hidden layer's output there.
  const ModelSpec stack = dense_stack(20, {12, 9}, 3);
  auto listed = Model::build(stack, seed).value();
  testing::CardKeepingMatmul stacked(device);
  loss(*listed, stacked, random_batch(stack, 13, seed), true);
  EXPECT_EQ(stacked.results_left, 4u);
  EXPECT_EQ(stacked.masks, 2u);
}

// A convolution without a fused ReLU whose output a Flatten hands to a
// dense layer leaves it on the card: the Flatten's output, and the dense
// layer's input gradient on the way back, are views there, and the
// convolution reads that gradient for its dW and dx and sums it for its
// db. With a fused ReLU
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
    testing::CardKeepingMatmul card(device);
    expect_the_host_paths_bits(spec(relu), random_batch(spec(relu), 11, seed), seed, device.info(), card);
    // Without the ReLU: left, the convolution's output, the first dense
    // layer's output and both dense layers' input gradients; read, the
    // view by the first dense layer's forward and dW, its output by the
    // second's forward and dW, its masked gradient twice (dW, dx), and the
    // gradient's view by the convolution's dW and dx; summed, the masked
    // gradient (db) and the view (the convolution's db). With it, only
    // what lies between the dense layers.
    EXPECT_EQ(card.results_left, relu ? 2u : 4u);
    EXPECT_EQ(card.operands_read, relu ? 4u : 8u);
    EXPECT_EQ(card.sums_read, relu ? 1u : 2u);
    EXPECT_EQ(card.views(), relu ? 0u : 2u);
    EXPECT_EQ(card.masks, 1u);
  }
  // Up to the Flatten: its output is what the host asked for.
  testing::CardKeepingMatmul card(device);
  expect_a_partial_pass_on_the_host(spec(false), random_batch(spec(false), 11, seed), seed, 3, device.info(),
                                    card);
  EXPECT_EQ(card.views(), 0u);
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

}  // namespace
}  // namespace systole
