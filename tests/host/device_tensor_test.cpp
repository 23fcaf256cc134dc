// SPDX-License-Identifier: Apache-2.0
// Tensors on the card (label emu): DeviceTensor's handles, parts and
// views; products and sums that read and write them on a unit, with the
// bits of the same work from host values; the parameters kept on the card
// read and written through their parts.
#include "systole/device_tensor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "card_unit.h"
#include "systole/matmul.h"

namespace systole {
namespace {

using namespace testing::card;

// Two dense layers' forward and backward on a modelled card that keeps the
// parameters: with the hidden activation and its gradients left on the
// card (card tensors as C and A, the ReLU mask there) the results are the bits of the
// chain through the host, the hidden tensors read back from the card are
// the host's, and they never cross the link.
TEST(DeviceMatmulCardTensors, AChainOnTheCardGivesTheHostChainsBitsWithoutCrossingTheLink) {
  const uint32_t seed = 13, m = 13, in = 37, hidden = 21, out = 6;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  auto random = [&](std::size_t count) { return normal_values(rng, count); };
  // The parameters as a store lays them out: W1 [hidden x in], b1, W2 [out x hidden].
  std::vector<float> values = random(std::size_t(hidden) * in + hidden + std::size_t(out) * hidden);
  std::vector<float> gradients(values.size(), 0.0f);
  const float *w1 = values.data(), *b1 = w1 + std::size_t(hidden) * in, *w2 = b1 + hidden;
  const std::vector<float> x = random(std::size_t(m) * in), g2 = random(std::size_t(m) * out);

  ResidentUnit unit = resident_unit(values, gradients);
  Device& device = unit.device;
  DeviceMatmul* matmul = unit.matmul.get();
  matmul->keep_resident(unit.resident);
  // The parameters' parts on the card, which the products read.
  const DeviceTensor w1_card = unit.values(0, std::size_t(hidden) * in),
                     b1_card = unit.values(std::size_t(hidden) * in, hidden),
                     w2_card = unit.values(std::size_t(hidden) * (in + 1), std::size_t(out) * hidden);
  const std::size_t hidden_values = std::size_t(m) * hidden;
  MatmulCall forward1 = product(m, hidden, in, x.data(), w1, nullptr);  // y1 = relu(x W1^T + b1)
  forward1.b.card = w1_card;
  forward1.b_transposed = true;
  forward1.bias = b1;
  forward1.bias.card = b1_card;
  forward1.relu = true;

  // Both chains: y2 = y1 W2^T; g1 = relu_mask(g2 W2, y1); dW1 = g1^T x.
  struct Chain {
    std::vector<float> y1, y2, g1, masked, dw1;
    DeviceTensor y1_card, g1_card, masked_card;
  };
  auto run_chain = [&](bool card, Chain& chain) -> Status {
    chain.y1.assign(hidden_values, 0.0f);
    chain.g1.assign(hidden_values, 0.0f);
    chain.masked.assign(hidden_values, 0.0f);
    chain.y2.assign(std::size_t(m) * out, 0.0f);
    chain.dw1.assign(std::size_t(hidden) * in, 0.0f);
    if (card)
      for (DeviceTensor* tensor : {&chain.y1_card, &chain.g1_card, &chain.masked_card}) {
        auto made = matmul->allocate(hidden_values);
        if (!made.ok()) return made.status();
        *tensor = std::move(made).value();
      }
    MatmulCall f1 = forward1;
    f1.c = card ? nullptr : chain.y1.data();
    f1.c.card = chain.y1_card;
    SYSTOLE_RETURN_IF_ERROR(matmul->run(f1));
    MatmulCall f2 = product(m, out, hidden, card ? nullptr : chain.y1.data(), w2, chain.y2.data());
    f2.a.card = chain.y1_card;
    f2.b.card = w2_card;
    f2.b_transposed = true;
    SYSTOLE_RETURN_IF_ERROR(matmul->run(f2));
    MatmulCall dx = product(m, hidden, out, g2.data(), w2, card ? nullptr : chain.g1.data());  // g1 = g2 W2
    dx.b.card = w2_card;
    dx.c.card = chain.g1_card;
    SYSTOLE_RETURN_IF_ERROR(matmul->run(dx));
    if (card) {
      SYSTOLE_RETURN_IF_ERROR(
          matmul->relu_mask(chain.g1_card, chain.y1_card, chain.masked_card, chain.masked_card.count()));
    } else {
      for (std::size_t i = 0; i < chain.g1.size(); ++i)
        chain.masked[i] = chain.y1[i] > 0 ? chain.g1[i] : 0.0f;
    }
    MatmulCall dw = product(hidden, in, m, card ? nullptr : chain.masked.data(), x.data(), chain.dw1.data());
    dw.a_transposed = true;
    dw.a.card = chain.masked_card;
    return matmul->run(dw);
  };
  Chain host, card;
  const uint64_t before = device.card_model()->projection().link_bytes;
  ASSERT_TRUE(run_chain(false, host).ok());
  const uint64_t between = device.card_model()->projection().link_bytes;
  const Status ran = run_chain(true, card);
  ASSERT_TRUE(ran.ok()) << ran.to_string();
  const uint64_t after = device.card_model()->projection().link_bytes;
  EXPECT_EQ(std::memcmp(host.y2.data(), card.y2.data(), host.y2.size() * 4), 0);
  EXPECT_EQ(std::memcmp(host.dw1.data(), card.dw1.data(), host.dw1.size() * 4), 0);
  EXPECT_GT(std::count_if(host.masked.begin(), host.masked.end(), [](float v) { return v == 0.0f; }), 0)
      << "the mask masks something";
  // The products read y1 and the mask through bf16 copies the card made
  // (besides the parameters').
  EXPECT_EQ(matmul->copied_tensors(), 2u);
  // What the card read of the parameters (W1, b1, W2: all of them) the
  // host need not bring back.
  EXPECT_TRUE(matmul->card_read().gaps(values.size()).empty());
  // The host chain moves y1 down and up (4 + 2 bytes a value), g1 down
  // (4) and the mask up (2); the card chain moves none of them, and its
  // command lists carry three more descriptors (192 bytes).
  const uint64_t host_bytes = between - before, card_bytes = after - between;
  EXPECT_GE(host_bytes + 192, card_bytes + 12ull * m * hidden) << host_bytes << " against " << card_bytes;
  // Read back (a sync each), the card's tensors hold the host's bits.
  const std::pair<const std::vector<float>*, const DeviceTensor*> kept[] = {
      {&host.y1, &card.y1_card}, {&host.g1, &card.g1_card}, {&host.masked, &card.masked_card}};
  for (const auto& [want, tensor] : kept) {
    std::vector<float> got(tensor->count());
    ASSERT_TRUE(tensor->read(got.data()).ok());
    EXPECT_EQ(std::memcmp(got.data(), want->data(), got.size() * 4), 0);
  }

  // What the card holds too little of is refused by name.
  MatmulCall longer = forward1;
  longer.a = nullptr;
  longer.a.card = card.y1_card;
  longer.k = hidden + 1;  // reads one more column than y1 has
  longer.b = values.data();
  longer.c = host.y1.data();
  Status refused = matmul->run(longer);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("matmul: operand A reads " + std::to_string(m * (hidden + 1)) +
                                   " values of a tensor the card holds " + std::to_string(m * hidden)),
            std::string::npos)
      << refused.message();
  MatmulCall accumulated = forward1;
  accumulated.c.card = card.y1_card;
  accumulated.accumulate = true;
  refused = matmul->run(accumulated);
  EXPECT_NE(refused.message().find("cannot accumulate"), std::string::npos) << refused.message();
  refused = matmul->relu_mask(DeviceTensor(), card.y1_card, card.masked_card, card.masked_card.count());
  EXPECT_EQ(refused.message(),
            "relu mask: the gradient is missing, the layer's output on the card and the masked gradient on "
            "the card: all three must be on the host, or all on the card");
  refused = matmul->relu_mask(card.y1.data(), card.y1_card, card.masked_card, card.masked_card.count());
  EXPECT_NE(refused.message().find("the gradient is on the host, the layer's output on the card"),
            std::string::npos)
      << refused.message();
}

// A device tensor's parts, views and resizings name its values (one id),
// read and write only their own span, and refuse what does not fit by
// name; the values' memory goes with the last handle.
TEST(DeviceTensor, PartsViewsAndResizesShareTheValuesAndTheirId) {
  auto refusal_of = [](const Status& status) {
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    return status.message();
  };
  std::unique_ptr<DeviceMatmul> unit = sw_emu_unit();
  DeviceTensor whole = unit->allocate(12).value();
  std::vector<float> twelve(12);
  for (std::size_t i = 0; i < twelve.size(); ++i) twelve[i] = float(i) - 5.5f;
  ASSERT_TRUE(whole.write(twelve.data()).ok());
  DeviceTensor middle = whole.part(4, 6).value();
  EXPECT_TRUE(middle.same_values(whole));
  EXPECT_EQ(middle.id(), whole.id());
  EXPECT_EQ(middle.address(), whole.address() + 16);
  std::vector<float> six(6);
  ASSERT_TRUE(middle.read(six.data()).ok());
  EXPECT_EQ(six, std::vector<float>(twelve.begin() + 4, twelve.begin() + 10));
  // Shrunk and grown again in place: the same values.
  DeviceTensor shorter = whole.resized(5).value();
  EXPECT_EQ(shorter.count(), 5u);
  EXPECT_EQ(shorter.room(), 12u);
  EXPECT_EQ(shorter.resized(12).value().address(), whole.address());
  EXPECT_EQ(refusal_of(shorter.resized(13).status()), "device tensor: 13 values where its memory holds 12");
  EXPECT_EQ(refusal_of(whole.part(10, 3).status()), "device tensor: values [10, 13) of a tensor of 12");
  // A view: blocks of 2 x 3 read transposed; parts of it are whole blocks.
  DeviceTensor view = whole.blocks_transposed(2, 3).value();
  EXPECT_FALSE(view.reads_in_order());
  EXPECT_TRUE(whole.blocks_transposed(1, 12).value().reads_in_order());
  EXPECT_EQ(view.part(6, 6).value().address(), whole.address() + 24);
  EXPECT_EQ(refusal_of(view.part(3, 6).status()),
            "device tensor: values [3, 9) of a view are not whole blocks of 2 x 3");
  EXPECT_EQ(refusal_of(whole.blocks_transposed(5, 1).status()),
            "device tensor: 12 values are not whole blocks of 5 x 1");
  EXPECT_EQ(refusal_of(view.resized(6).status()), "device tensor: a view is not resized");
  // Another allocation is other values, with another id; the memory goes
  // with the last handle.
  const DeviceTensor other = unit->allocate(12).value();
  EXPECT_NE(other.id(), whole.id());
  EXPECT_FALSE(other.same_values(whole));
  std::weak_ptr<const void> lifetime = whole.lifetime();
  whole = DeviceTensor();
  EXPECT_FALSE(lifetime.expired());  // its part, view and resizing still hold the values
  middle = shorter = view = DeviceTensor();
  EXPECT_TRUE(lifetime.expired());
  EXPECT_FALSE(DeviceTensor());
  EXPECT_EQ(refusal_of(DeviceTensor().read(six.data())), "device tensor: no tensor");
}

// What a device plugin does with a tensor, through the public API: make
// it on the unit, fill it from the host, multiply with it (the result left
// on the card too) and read the result back; the bits of the same product
// from host operands.
TEST(DeviceMatmulCardTensors, ATensorIsMadeFilledMultipliedAndReadBack) {
  const uint32_t seed = 29, m = 7, k = 19, n = 5;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const std::vector<float> a = normal_values(rng, std::size_t(m) * k),
                           b = normal_values(rng, std::size_t(k) * n);
  std::unique_ptr<DeviceMatmul> unit = sw_emu_unit();

  DeviceTensor x = unit->allocate(a.size()).value(), w = unit->allocate(b.size()).value();
  DeviceTensor y = unit->allocate(std::size_t(m) * n).value();
  ASSERT_TRUE(x.write(a.data()).ok());
  ASSERT_TRUE(w.write(b.data()).ok());
  MatmulCall call = product(m, n, k, nullptr, nullptr, nullptr);
  call.a.card = x;
  call.b.card = w;
  call.c.card = y;
  ASSERT_TRUE(unit->run(call).ok());
  std::vector<float> got(y.count()), want(y.count());
  ASSERT_TRUE(y.read(got.data()).ok());
  ASSERT_TRUE(unit->run(product(m, n, k, a.data(), b.data(), want.data())).ok());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * 4), 0);

  // Written again from the host, x is read again (its bf16 copy is made
  // anew): the bits of the product of the new values.
  std::vector<float> a2 = a;
  for (float& v : a2) v = -2.5f * v;
  const uint64_t version = x.version();
  ASSERT_TRUE(x.write(a2.data()).ok());
  EXPECT_GT(x.version(), version);
  std::vector<float> again(y.count()), want2(y.count());
  ASSERT_TRUE(unit->run(call).ok());
  ASSERT_TRUE(y.read(again.data()).ok());
  ASSERT_TRUE(unit->run(product(m, n, k, a2.data(), b.data(), want2.data())).ok());
  EXPECT_EQ(std::memcmp(again.data(), want2.data(), want2.size() * 4), 0);
  // x back to the first values, and y their product again, for the sums.
  ASSERT_TRUE(x.write(a.data()).ok());
  ASSERT_TRUE(unit->run(call).ok());

  // A sum of its rows on the card, left there, is the host's.
  DeviceTensor sums = unit->allocate(n).value();
  SumCall sum;
  sum.x.card = y;
  sum.rows = m;
  sum.width = n;
  sum.out.card = sums;
  ASSERT_TRUE(unit->sum(sum).ok());
  std::vector<float> summed(n), expected(n);
  ASSERT_TRUE(sums.read(summed.data()).ok());
  sum_rows(want.data(), m, n, unit->k_tile(), expected.data());
  EXPECT_EQ(std::memcmp(summed.data(), expected.data(), n * 4), 0);

  // A unit without a vector engine (which makes the bf16 copies) says so.
  std::unique_ptr<DeviceMatmul> plain = sw_emu_unit(false);
  EXPECT_FALSE(plain->supports(MatmulExecutor::Feature::kCardTensors));
  const Status refused = plain->allocate(4).status();
  EXPECT_EQ(refused.code(), StatusCode::kUnavailable);
  EXPECT_EQ(
      refused.message(),
      "allocate: tensors on the card need the compute units' vector engine, which this device's units do "
      "not have");
}

// Per example, HWC to CHW (`inverse`: back), as Flatten orders the values.
std::vector<float> flatten_order(const std::vector<float>& x, uint32_t positions, uint32_t channels,
                                 bool inverse) {
  std::vector<float> y(x.size());
  const std::size_t block = std::size_t(positions) * channels;
  for (std::size_t b = 0; b < x.size() / block; ++b)
    for (uint32_t p = 0; p < positions; ++p)
      for (uint32_t c = 0; c < channels; ++c) {
        const std::size_t hwc = b * block + p * channels + c, chw = b * block + c * positions + p;
        (inverse ? y[hwc] : y[chw]) = inverse ? x[chw] : x[hwc];
      }
  return y;
}

// A convolution's output held on the card and written a chunk of examples
// at a time, a Flatten's view of it read by a dense layer's forward and dW,
// and the view of that layer's input gradient read back by the
// convolution's dW (transposed), db and dx, a chunk at a time: the bits of
// the same products through the host, with Flatten's reordering done
// there. Reads a view cannot make are refused by name.
TEST(DeviceMatmulCardTensors, ViewsReadTheirTensorsBlocksTransposed) {
  const uint32_t seed = 17, batch = 5, chunk = 2, positions = 6, filters = 7, patch = 9, units = 3;
  const uint32_t features = positions * filters;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  auto random = [&](std::size_t count) { return normal_values(rng, count); };
  // The parameters: the convolution's W [filters x patch], the dense
  // layer's W2 [units x features].
  std::vector<float> values = random(std::size_t(filters) * patch + std::size_t(units) * features);
  const float *w = values.data(), *w2 = w + std::size_t(filters) * patch;
  const std::vector<float> patches = random(std::size_t(batch) * positions * patch);
  const std::vector<float> delta = random(std::size_t(batch) * units),
                           ones(std::size_t(chunk) * positions, 1.0f);
  std::unique_ptr<DeviceMatmul> unit = sw_emu_unit();
  DeviceMatmul* matmul = unit.get();

  struct Chain {
    std::vector<float> y, flat, out, dw2, g_flat, g, dw, db, dx;
    DeviceTensor y_card, flat_card, g_flat_card, g_card;
  };
  const std::size_t size = std::size_t(batch) * features;
  // Values [first, first + count) of a card tensor (none on the host).
  auto part = [](const DeviceTensor& tensor, std::size_t first, std::size_t count) {
    return tensor ? tensor.part(first, count).value() : DeviceTensor();
  };
  auto run_chain = [&](bool card, Chain& r) -> Status {
    r.y.assign(size, 0.0f);
    r.g_flat.assign(size, 0.0f);
    r.out.assign(std::size_t(batch) * units, 0.0f);
    r.dw2.assign(std::size_t(units) * features, 0.0f);
    r.dw.assign(std::size_t(filters) * patch, 0.0f);
    r.db.assign(filters, 0.0f);
    r.dx.assign(std::size_t(batch) * positions * patch, 0.0f);
    if (card) {
      r.y_card = matmul->allocate(size).value();
      r.g_flat_card = matmul->allocate(size).value();
    }
    // Forward: y = patches W^T a chunk at a time; flat = flatten(y); out =
    // flat W2^T.
    for (uint32_t first = 0; first < batch; first += chunk) {
      const uint32_t rows = std::min(chunk, batch - first) * positions;
      MatmulCall call = product(rows, filters, patch, patches.data() + std::size_t(first) * positions * patch,
                                w, card ? nullptr : r.y.data() + std::size_t(first) * features);
      call.b_transposed = true;
      call.c.card = part(r.y_card, std::size_t(first) * features, std::size_t(rows) * filters);
      SYSTOLE_RETURN_IF_ERROR(matmul->run(call));
    }
    if (card)
      r.flat_card = r.y_card.blocks_transposed(positions, filters).value();
    else
      r.flat = flatten_order(r.y, positions, filters, false);
    const float* flat = card ? nullptr : r.flat.data();
    MatmulCall dense = product(batch, units, features, flat, w2, r.out.data());
    dense.a.card = r.flat_card;
    dense.b_transposed = true;
    SYSTOLE_RETURN_IF_ERROR(matmul->run(dense));
    // Backward: dW2 = delta^T flat; g_flat = delta W2; g = the view back.
    MatmulCall dw2 = product(units, features, batch, delta.data(), flat, r.dw2.data());
    dw2.a_transposed = true;
    dw2.b.card = r.flat_card;
    MatmulCall dx2 = product(batch, features, units, delta.data(), w2, card ? nullptr : r.g_flat.data());
    dx2.c.card = r.g_flat_card;
    SYSTOLE_RETURN_IF_ERROR(matmul->run({dw2, dx2}));
    if (card)
      r.g_card = r.g_flat_card.blocks_transposed(filters, positions).value();
    else
      r.g = flatten_order(r.g_flat, positions, filters, true);
    // The convolution's dW = g^T patches, db = 1^T g, dx = g W, a chunk at
    // a time, dW and db chained through C.
    for (uint32_t first = 0; first < batch; first += chunk) {
      const uint32_t rows = std::min(chunk, batch - first) * positions;
      const float* g = card ? nullptr : r.g.data() + std::size_t(first) * features;
      const DeviceTensor g_card = part(r.g_card, std::size_t(first) * features, std::size_t(rows) * filters);
      MatmulCall dw = product(filters, patch, rows, g,
                              patches.data() + std::size_t(first) * positions * patch, r.dw.data());
      dw.a_transposed = true;
      dw.a.card = g_card;
      dw.accumulate = first > 0;
      MatmulCall db = product(1, filters, rows, ones.data(), g, r.db.data());
      db.b.card = g_card;
      db.accumulate = first > 0;
      MatmulCall dx =
          product(rows, patch, filters, g, w, r.dx.data() + std::size_t(first) * positions * patch);
      dx.a.card = g_card;
      SYSTOLE_RETURN_IF_ERROR(matmul->run({dw, db, dx}));
    }
    return ok_status();
  };
  Chain host, card;
  ASSERT_TRUE(run_chain(false, host).ok());
  const Status ran = run_chain(true, card);
  ASSERT_TRUE(ran.ok()) << ran.to_string();
  const std::pair<const char*, std::vector<float> Chain::*> results[] = {
      {"out", &Chain::out}, {"dw2", &Chain::dw2}, {"dw", &Chain::dw}, {"db", &Chain::db}, {"dx", &Chain::dx}};
  for (const auto& [name, member] : results)
    EXPECT_EQ(std::memcmp((host.*member).data(), (card.*member).data(), (host.*member).size() * 4), 0)
        << name;

  // What a view cannot be used for is refused by name.
  auto refusal = [](const Status& status) {
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    return status.message();
  };
  EXPECT_EQ(refusal(card.flat_card.part(1, features).status()),
            "device tensor: values [1, 43) of a view are not whole blocks of 6 x 7");
  MatmulCall short_read = product(1, units, features - 1, nullptr, w2, card.out.data());
  short_read.a.card = card.flat_card;
  short_read.b_transposed = true;
  short_read.ldb = features;
  EXPECT_EQ(
      refusal(matmul->run(short_read)),
      "matmul: operand A reads a view of a card tensor (blocks of 6 x 7 read transposed) as 1 x 41, row "
      "stride 41, from value 0, which does not fall on whole blocks");
  EXPECT_EQ(refusal(matmul->relu_mask(card.g_card, card.y_card, card.g_flat_card, card.g_flat_card.count())),
            "relu mask: the gradient is a view of a card tensor whose blocks read transposed; only a "
            "product's operand can read it");
  EXPECT_EQ(refusal(card.y_card.part(0, features + 1).value().blocks_transposed(positions, filters).status()),
            "device tensor: 43 values are not whole blocks of 6 x 7");
  EXPECT_EQ(refusal(card.flat_card.blocks_transposed(positions, filters).status()),
            "device tensor: the tensor viewed is itself a view");

  // A view whose blocks are single rows reads as its tensor.
  std::vector<float> from_alias(std::size_t(units), 0.0f), from_host(from_alias.size(), 0.0f);
  const DeviceTensor alias = card.g_flat_card.blocks_transposed(1, features).value();
  ASSERT_TRUE(alias.reads_in_order());
  MatmulCall read = product(1, units, features - 1, nullptr, w2, from_alias.data());
  read.a.card = alias;
  read.b_transposed = true;
  read.ldb = features;
  ASSERT_TRUE(matmul->run(read).ok());
  read.a = host.g_flat.data();  // the same values from the host
  read.c = from_host.data();
  ASSERT_TRUE(matmul->run(read).ok());
  EXPECT_EQ(std::memcmp(from_alias.data(), from_host.data(), from_host.size() * 4), 0);

  // A tensor written again is read again: the copy a product made of it
  // through its view is made anew.
  MatmulCall again = product(batch, features, units, delta.data(), w2, nullptr);  // y = delta W2
  again.c.card = card.y_card;
  ASSERT_TRUE(matmul->run(again).ok());
  std::vector<float> got(std::size_t(batch) * units), want(got.size());
  MatmulCall reread = product(batch, units, features, nullptr, w2, got.data());
  reread.a.card = card.flat_card;  // the forward's read, whose copy is out of date now
  reread.b_transposed = true;
  ASSERT_TRUE(matmul->run(reread).ok());
  const std::vector<float> flat = flatten_order(host.g_flat, positions, filters, false);
  reread.a = flat.data();  // delta W2, flattened on the host
  reread.c = want.data();
  ASSERT_TRUE(matmul->run(reread).ok());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * 4), 0);
}

// The bookkeeping of what the card read and wrote: spans merge when they
// touch or overlap, and the gaps are the rest of the region.
TEST(Intervals, MergeTouchingSpansAndGiveTheGaps) {
  Intervals spans;
  spans.add(10, 20);
  spans.add(30, 40);
  spans.add(5, 5);  // empty: nothing
  EXPECT_TRUE(spans.contains(12, 20));
  EXPECT_FALSE(spans.contains(15, 31));
  using Gaps = std::vector<std::pair<std::size_t, std::size_t>>;
  EXPECT_EQ(spans.gaps(50), (Gaps{{0, 10}, {20, 30}, {40, 50}}));
  spans.add(20, 30);  // touches both: one span
  EXPECT_TRUE(spans.contains(10, 40));
  EXPECT_EQ(spans.gaps(50), (Gaps{{0, 10}, {40, 50}}));
  spans.add(0, 12);
  spans.add(35, 60);  // past the region's end
  EXPECT_EQ(spans.gaps(50), Gaps{});
  EXPECT_EQ(spans.gaps(70), (Gaps{{60, 70}}));
  spans.clear();
  EXPECT_EQ(spans.gaps(3), (Gaps{{0, 3}}));
}

}  // namespace
}  // namespace systole
