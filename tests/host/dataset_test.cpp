// SPDX-License-Identifier: Apache-2.0
// IDX reading and the batch stream (label unit).
#include "systole/dataset.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <set>

#include "common/temp_dir_test.h"
#include "systole/fault_points.h"

namespace systole {
namespace {

class IdxFiles : public testing::TempDirTest {
 protected:
  static void put32(std::vector<uint8_t>& out, uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(uint8_t(v >> shift));
  }
  // Writes gzip-compressed bytes.
  std::string write(const std::string& name, const std::vector<uint8_t>& bytes) {
    const std::string file_path = path(name);
    gzFile file = gzopen(file_path.c_str(), "wb");
    gzwrite(file, bytes.data(), unsigned(bytes.size()));
    gzclose(file);
    return file_path;
  }
  std::vector<uint8_t> images(uint32_t count, uint32_t rows, uint32_t cols) {
    std::vector<uint8_t> out;
    put32(out, 0x803);
    put32(out, count);
    put32(out, rows);
    put32(out, cols);
    for (uint32_t i = 0; i < count * rows * cols; ++i) out.push_back(uint8_t(i * 7));
    return out;
  }
  std::vector<uint8_t> labels(uint32_t count) {
    std::vector<uint8_t> out;
    put32(out, 0x801);
    put32(out, count);
    for (uint32_t i = 0; i < count; ++i) out.push_back(uint8_t(i % 10));
    return out;
  }
};

TEST_F(IdxFiles, ReadsImagesAndLabels) {
  auto data = read_idx(write("i.gz", images(5, 2, 3)), write("l.gz", labels(5)), 10);
  ASSERT_TRUE(data.ok()) << data.status().to_string();
  EXPECT_EQ(data->examples, 5u);
  EXPECT_EQ(data->features, 6u);
  EXPECT_FLOAT_EQ(data->values[1], 7 / 255.0f);
  EXPECT_EQ(data->labels[4], 4);
  const Dataset tail = data->slice(3, 2);
  EXPECT_EQ(tail.examples, 2u);
  EXPECT_FLOAT_EQ(tail.values[0], uint8_t(18 * 7) / 255.0f);
}

TEST_F(IdxFiles, ErrorsNameTheFileAndTheProblem) {
  const std::string good_labels = write("l.gz", labels(5));
  auto expect = [&](const Result<Dataset>& result, StatusCode code, const std::string& text) {
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.status().code(), code) << result.status().to_string();
    EXPECT_NE(result.status().message().find(text), std::string::npos) << result.status().message();
  };
  std::vector<uint8_t> bad_magic = images(5, 2, 3);
  bad_magic[3] = 0x02;
  expect(read_idx(write("magic.gz", bad_magic), good_labels, 10), StatusCode::kInvalidArgument,
         "magic.gz: bad magic 0x00000802");
  std::vector<uint8_t> truncated = images(5, 2, 3);
  truncated.resize(truncated.size() - 1);
  expect(read_idx(write("short.gz", truncated), good_labels, 10), StatusCode::kDataLoss,
         "short.gz: header declares 30 bytes of data, file has 29");
  expect(read_idx(write("head.gz", {0, 0, 8}), good_labels, 10), StatusCode::kDataLoss,
         "head.gz: truncated header");
  expect(read_idx(write("i.gz", images(4, 2, 3)), good_labels, 10), StatusCode::kInvalidArgument,
         "5 labels for 4 images");
  expect(read_idx(write("i.gz", images(5, 2, 3)), good_labels, 3), StatusCode::kInvalidArgument,
         "label 3 of example 3 is not below 3");
  expect(read_idx(path("missing.gz"), good_labels, 10), StatusCode::kNotFound, "missing.gz: cannot open");
  expect(read_idx(write("zero.gz", images(0, 2, 3)), good_labels, 10), StatusCode::kInvalidArgument,
         "dimension 0 is zero");
}

TEST(BatchStream, ShufflesDeterministicallyAndDropsTheRemainder) {
  Dataset data;
  data.examples = 103;
  data.features = 1;
  data.classes = 10;
  for (uint32_t i = 0; i < data.examples; ++i) {
    data.values.push_back(float(i));
    data.labels.push_back(uint8_t(i % 10));
  }
  auto epoch = [&](uint64_t seed, uint32_t number) {
    BatchStream stream(data, 10, seed, number, true, 2);
    EXPECT_EQ(stream.batches(), 10u);
    std::vector<float> order;
    Batch batch;
    for (;;) {
      Result<bool> more = stream.next(batch);
      EXPECT_TRUE(more.ok()) << more.status().to_string();
      if (!more.ok() || !*more) break;
      EXPECT_EQ(batch.size, 10u);
      for (uint32_t i = 0; i < batch.size; ++i) {
        EXPECT_EQ(batch.labels[i], uint32_t(batch.values[i]) % 10);
        order.push_back(batch.values[i]);
      }
    }
    return order;
  };
  const std::vector<float> first = epoch(7, 0);
  EXPECT_EQ(first.size(), 100u);
  EXPECT_EQ(std::set<float>(first.begin(), first.end()).size(), 100u) << "no example twice";
  EXPECT_EQ(epoch(7, 0), first) << "same seed and epoch, same order";
  EXPECT_NE(epoch(7, 1), first) << "the next epoch reshuffles";
  EXPECT_NE(epoch(8, 0), first) << "another seed, another order";
}

// `examples` examples of `features` zeros, all of class 0.
Dataset zeros(uint32_t examples, uint32_t features) {
  Dataset data;
  data.examples = examples;
  data.features = features;
  data.values.assign(std::size_t(examples) * features, 0.0f);
  data.labels.assign(examples, 0);
  return data;
}

TEST(BatchStream, StopsEarlyWithoutHanging) {
  const Dataset data = zeros(1000, 4);
  BatchStream stream(data, 10, 1, 0, true, 1);
  Batch batch;
  ASSERT_TRUE(*stream.next(batch));
  // The destructor must stop the producer that waits for room.
}

// A failure of the producer thread reaches the consumer as an error after
// the batches made before it, and the stream ends without hanging.
TEST(BatchStream, PassesAProducerFailureToTheConsumer) {
  const Dataset data = zeros(100, 2);
  ASSERT_TRUE(arm_faults("batch_stream.produce@4=error").ok());
  BatchStream stream(data, 10, 1, 0, true, 2);
  Batch batch;
  for (int b = 0; b < 3; ++b) {
    Result<bool> more = stream.next(batch);
    ASSERT_TRUE(more.ok() && *more) << "batch " << b;
  }
  Result<bool> failed = stream.next(batch);
  ASSERT_TRUE(arm_faults("").ok());
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(failed.status().message(), "injected fault at batch_stream.produce");
  // And a stream after it is whole again.
  BatchStream next(data, 10, 1, 1, true, 2);
  int batches = 0;
  while (*next.next(batch)) ++batches;
  EXPECT_EQ(batches, 10);
}

}  // namespace
}  // namespace systole
