// The ring all-reduce and the strategy (label unit): exact sums in the
// documented order, identical results on every replica, awkward lengths, and
// no hang when a replica fails.
#include "systole/strategy.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <thread>

namespace systole {
namespace {

// Chunk c of n is summed in ring order c, c+1, ..., c-1.
std::vector<float> expected_sum(const std::vector<std::vector<float>>& inputs) {
  const uint32_t n = uint32_t(inputs.size());
  const std::size_t count = inputs[0].size();
  std::vector<float> out(count);
  for (uint32_t c = 0; c < n; ++c)
    for (std::size_t i = count * c / n; i < count * (c + 1) / n; ++i) {
      float total = inputs[c][i];
      for (uint32_t step = 1; step < n; ++step) total = total + inputs[(c + step) % n][i];
      out[i] = total;
    }
  return out;
}

TEST(RingAllReduce, SumsInTheDocumentedOrderOnEveryReplica) {
  const uint32_t seed = 3;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(-1e3f, 1e3f);
  for (uint32_t replicas : {1u, 2u, 3u, 4u, 5u}) {
    for (std::size_t length : {std::size_t(1), std::size_t(2), std::size_t(7), std::size_t(1001)}) {
      std::vector<std::vector<float>> inputs(replicas, std::vector<float>(length));
      for (auto& v : inputs)
        for (float& x : v) x = value(rng);
      const std::vector<float> expected = expected_sum(inputs);
      std::vector<std::vector<float>> buffers = inputs;
      Strategy strategy(replicas);
      const Status status = strategy.run([&](uint32_t r) { return strategy.all_reduce_sum(r, buffers[r]); });
      ASSERT_TRUE(status.ok()) << status.to_string();
      for (uint32_t r = 0; r < replicas; ++r)
        ASSERT_EQ(std::memcmp(buffers[r].data(), expected.data(), length * sizeof(float)), 0)
            << "seed " << seed << ", " << replicas << " replicas, length " << length << ", replica " << r;
    }
  }
}

TEST(RingAllReduce, TwoReplicasEqualAPlainSum) {
  // With two replicas both chunks add the same pair, and IEEE addition
  // commutes: the basis of the replica-equivalence test.
  std::vector<std::vector<float>> buffers = {{1e8f, 3.0f, -0.0f}, {1.0f, 1e-8f, 0.0f}};
  const std::vector<float> a = buffers[0], b = buffers[1];
  Strategy strategy(2);
  ASSERT_TRUE(strategy.run([&](uint32_t r) { return strategy.all_reduce_sum(r, buffers[r]); }).ok());
  for (std::size_t i = 0; i < a.size(); ++i) {
    const float plain = a[i] + b[i];
    EXPECT_EQ(std::memcmp(&buffers[0][i], &plain, 4), 0) << i;
  }
}

TEST(Strategy, AFailingReplicaEndsTheStepForAllWithItsError) {
  Strategy strategy(3);
  std::vector<std::vector<float>> buffers(3, std::vector<float>(10, 1.0f));
  const auto start = std::chrono::steady_clock::now();
  const Status status = strategy.run([&](uint32_t r) -> Status {
    if (r == 1) return Status(StatusCode::kDeviceError, "replica 1 broke");
    return strategy.all_reduce_sum(r, buffers[r]);
  });
  EXPECT_EQ(status.code(), StatusCode::kDeviceError);
  EXPECT_EQ(status.message(), "replica 1 broke") << "the root cause, not the aborts it caused";
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  // The next step works again.
  EXPECT_TRUE(strategy.run([&](uint32_t r) { return strategy.all_reduce_sum(r, buffers[r]); }).ok());
  EXPECT_EQ(buffers[0][0], 3.0f);
}

TEST(Strategy, ReduceSumsAndAverages) {
  EXPECT_EQ(Strategy::reduce(ReduceOp::kSum, {1, 2, 3}), 6);
  EXPECT_EQ(Strategy::reduce(ReduceOp::kMean, {1, 2, 3}), 2);
}

}  // namespace
}  // namespace systole
