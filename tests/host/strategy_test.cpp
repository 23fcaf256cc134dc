// SPDX-License-Identifier: Apache-2.0
// The ordered all-reduce and the strategy (label unit): exact sums in the
// documented order, identical results on every replica, awkward lengths,
// the same bits however the replicas are spread over processes, and no hang
// when a replica fails.
#include "systole/strategy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <new>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>

#include "common/thread_job.h"
#include "reference/reference.h"
#include "systole/descriptor.h"

namespace systole {
namespace {

using testing::ThreadJob;

// Every element summed left to right in replica order (the inputs hold no
// zeros, subnormals or NaNs, which the next test covers).
std::vector<float> expected_sum(const std::vector<std::vector<float>>& inputs) {
  std::vector<float> out = inputs[0];
  for (std::size_t r = 1; r < inputs.size(); ++r)
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = out[i] + inputs[r][i];
  return out;
}

TEST(AllReduce, SumsInTheDocumentedOrderOnEveryReplica) {
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

// The all-reduce sums as the vector engine's sum descriptor does (the
// test reference's, on the same rows): from +0, subnormal terms read as
// zeros, tiny sums flushed, NaNs canonical. So a card's units summing
// their gradients give its bits. Terms are drawn from the awkward ends:
// signed zeros, subnormals, values near 2^-126, NaNs with payloads.
TEST(AllReduce, SumsAsTheVectorEngineSums) {
  const uint32_t seed = 12;
  std::mt19937 rng(seed);
  auto awkward = [&]() -> uint32_t {
    const uint32_t sign = (rng() & 1u) << 31;
    switch (rng() % 6) {
      case 0:
        return sign;  // +-0
      case 1:
        return sign | (1u + rng() % 0x7FFFFFu);  // subnormal
      case 2:
        return sign | (0x00800000u + rng() % 0x01000000u);  // 2^-126 .. 2^-124
      case 3:
        return sign | 0x7F800000u | (1u + rng() % 0x7FFFFFu);  // NaN
      default:
        return sign | (0x3E000000u + rng() % 0x02000000u);  // about 0.1
    }
  };
  for (uint32_t replicas : {2u, 3u, 5u}) {
    const std::size_t length = 1031;
    std::vector<std::vector<float>> buffers(replicas, std::vector<float>(length));
    std::vector<uint8_t> image((replicas + 1) * length * 4);
    for (uint32_t r = 0; r < replicas; ++r)
      for (std::size_t i = 0; i < length; ++i) {
        const uint32_t bits = awkward();
        std::memcpy(&buffers[r][i], &bits, 4);
        std::memcpy(image.data() + (r * length + i) * 4, &bits, 4);
      }
    spec::VectorDescriptor sum{};
    sum.opcode = uint8_t(spec::Opcode::kSum);
    sum.n = uint32_t(length), sum.rows = replicas, sum.stride = uint32_t(length);
    sum.z_addr = replicas * length * 4;
    reference::vector(sum, image);
    Strategy strategy(replicas);
    ASSERT_TRUE(strategy.run([&](uint32_t r) { return strategy.all_reduce_sum(r, buffers[r]); }).ok());
    for (uint32_t r = 0; r < replicas; ++r)
      ASSERT_EQ(std::memcmp(buffers[r].data(), image.data() + sum.z_addr, length * 4), 0)
          << "seed " << seed << ", " << replicas << " replicas, replica " << r;
  }
}

TEST(AllReduce, TwoReplicasEqualAPlainSum) {
  // Two replicas add one pair, and IEEE addition commutes: the basis of the
  // replica-equivalence test.
  std::vector<std::vector<float>> buffers = {{1e8f, 3.0f, -0.0f}, {1.0f, 1e-8f, 0.0f}};
  const std::vector<float> a = buffers[0], b = buffers[1];
  Strategy strategy(2);
  ASSERT_TRUE(strategy.run([&](uint32_t r) { return strategy.all_reduce_sum(r, buffers[r]); }).ok());
  for (std::size_t i = 0; i < a.size(); ++i) {
    const float plain = a[i] + b[i];
    EXPECT_EQ(std::memcmp(&buffers[0][i], &plain, 4), 0) << i;
  }
}

TEST(AllReduce, ProcessesOfKReplicasSumLikeOneProcessOfAll) {
  const uint32_t seed = 11;
  std::mt19937 rng(seed);
  // Magnitudes far apart, so that any other order changes the bits.
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-20, 20);
  for (const auto& [processes, per_process] : {std::pair{2u, 1u}, {2u, 2u}, {3u, 2u}, {4u, 1u}}) {
    const uint32_t local = per_process;  // captured below (a structured binding cannot be in C++17)
    for (std::size_t length : {std::size_t(1), std::size_t(7), std::size_t(70001)}) {
      const uint32_t replicas = processes * local;
      std::vector<std::vector<float>> inputs(replicas, std::vector<float>(length));
      for (auto& v : inputs)
        for (float& x : v) x = std::ldexp(mantissa(rng), exponent(rng));
      const std::vector<float> expected = expected_sum(inputs);
      std::vector<std::vector<float>> buffers = inputs;
      ThreadJob job(processes);
      std::vector<Status> statuses(processes);
      std::vector<double> losses(processes);
      std::vector<std::thread> threads;
      for (uint32_t p = 0; p < processes; ++p)
        threads.emplace_back([&, p] {
          ThreadJob::Member group(job, p);
          Strategy strategy(local, &group);
          EXPECT_EQ(strategy.num_replicas_in_sync(), replicas);
          statuses[p] = strategy.run(
              [&](uint32_t r) { return strategy.all_reduce_sum(r, buffers[strategy.first_replica() + r]); });
          std::vector<double> mine;
          for (uint32_t r = 0; r < local; ++r) mine.push_back(strategy.first_replica() + r + 1.0);
          auto total = strategy.reduce(ReduceOp::kSum, mine);
          losses[p] = total.ok() ? *total : -1;
        });
      for (std::thread& thread : threads) thread.join();
      for (uint32_t p = 0; p < processes; ++p) {
        ASSERT_TRUE(statuses[p].ok()) << statuses[p].to_string();
        EXPECT_EQ(losses[p], replicas * (replicas + 1) / 2.0) << "reduce over the job, process " << p;
      }
      for (uint32_t r = 0; r < replicas; ++r)
        ASSERT_EQ(std::memcmp(buffers[r].data(), expected.data(), length * sizeof(float)), 0)
            << "seed " << seed << ", " << processes << " processes x " << local << " replicas, length "
            << length << ", replica " << r;
    }
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

TEST(Strategy, AReplicaThatThrowsEndsTheStepWithAnErrorNamingIt) {
  Strategy strategy(3);
  std::vector<std::vector<float>> buffers(3, std::vector<float>(10, 1.0f));
  const auto start = std::chrono::steady_clock::now();
  const Status thrown = strategy.run([&](uint32_t r) -> Status {
    if (r == 2) throw std::runtime_error("a layer's vector::at out of range");
    return strategy.all_reduce_sum(r, buffers[r]);
  });
  EXPECT_EQ(thrown.code(), StatusCode::kInternal);
  EXPECT_EQ(thrown.message(), "replica 2: a layer's vector::at out of range");
  const Status exhausted = strategy.run([&](uint32_t r) -> Status {
    if (r == 0) throw std::bad_alloc();
    return strategy.all_reduce_sum(r, buffers[r]);
  });
  EXPECT_EQ(exhausted.message(), "replica 0: out of memory");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5)) << "the others did not wait";
  EXPECT_TRUE(strategy.run([&](uint32_t r) { return strategy.all_reduce_sum(r, buffers[r]); }).ok());
  EXPECT_EQ(buffers[1][0], 3.0f);
}

TEST(Strategy, ReplicasMeetAtEachJobAllReduceAndBarrier) {
  Strategy strategy(3);
  std::mutex mutex;
  std::vector<std::vector<std::string>> seen(3);  // per replica, in order
  std::vector<std::string> step(3);
  strategy.set_meeting([&](uint32_t r) {
    std::lock_guard<std::mutex> lock(mutex);
    seen[r].push_back(step[r]);
  });
  std::vector<std::vector<float>> buffers(3, std::vector<float>(10, 1.0f));
  ASSERT_TRUE(strategy
                  .run([&](uint32_t r) -> Status {
                    auto at = [&](const char* where) {
                      std::lock_guard<std::mutex> lock(mutex);
                      step[r] = where;
                    };
                    at("all-reduce");
                    SYSTOLE_RETURN_IF_ERROR(strategy.all_reduce_sum(r, buffers[r]));
                    at("barrier");
                    SYSTOLE_RETURN_IF_ERROR(strategy.barrier(r));
                    at("after");
                    return ok_status();
                  })
                  .ok());
  for (uint32_t r = 0; r < 3; ++r)
    EXPECT_EQ(seen[r], (std::vector<std::string>{"", "all-reduce", "barrier"})) << "replica " << r;
  // A failed meeting is none.
  std::fill(seen.begin(), seen.end(), std::vector<std::string>{});
  EXPECT_FALSE(strategy
                   .run([&](uint32_t r) -> Status {
                     if (r == 1) return Status(StatusCode::kDeviceError, "replica 1 broke");
                     return strategy.all_reduce_sum(r, buffers[r]);
                   })
                   .ok());
  for (uint32_t r = 0; r < 3; ++r) EXPECT_EQ(seen[r].size(), 1u) << "replica " << r << ": the job's start";
}

TEST(Strategy, ReduceSumsAndAverages) {
  Strategy strategy(3);
  EXPECT_EQ(strategy.reduce(ReduceOp::kSum, {1, 2, 3}).value(), 6);
  EXPECT_EQ(strategy.reduce(ReduceOp::kMean, {1, 2, 3}).value(), 2);
  const std::vector<std::vector<double>> per_replica = {{1, 10}, {2, 20}, {3, 30}};
  EXPECT_EQ(strategy.reduce(ReduceOp::kSum, per_replica).value(), (std::vector<double>{6, 60}));
  EXPECT_EQ(strategy.reduce(ReduceOp::kMean, per_replica).value(), (std::vector<double>{2, 20}));
}

}  // namespace
}  // namespace systole
