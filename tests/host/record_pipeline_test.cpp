// SPDX-License-Identifier: Apache-2.0
// The record pipeline over TFRecord files (label unit): its sharding,
// interleave order, determinism whatever the thread count, corrupt and
// failing records, the epoch read ahead and sampled negatives.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <map>
#include <set>

#include "common/feature_spec.h"
#include "common/tfrecord_files.h"
#include "systole/fault_points.h"
#include "systole/fit.h"
#include "systole/record_pipeline.h"
#include "systole/tf_example.h"
#include "systole/tfrecord.h"

namespace systole {
namespace {

using testing::read_all;
using testing::spec;
using testing::write_all;

// Files of examples {"v": [index], "label": index % 10}, `per_file[i]`
// records in file i; every record's index is unique.
class Pipelines : public testing::TFRecordFileTest {
 protected:
  void SetUp() override {
    TFRecordFileTest::SetUp();
    FeatureSpec v = spec("v", FeatureType::kFloat, {1});
    FeatureSpec label = spec("label", FeatureType::kInt64, {});
    schema_ = std::move(ExampleSchema::create({v, label})).value();
    columns_ = {{"v"}, "label", 10};
  }

  std::vector<std::string> write_files(const std::vector<uint32_t>& per_file) {
    std::vector<std::string> files;
    uint32_t index = 0;
    for (std::size_t f = 0; f < per_file.size(); ++f) {
      std::vector<std::string> records;
      for (uint32_t i = 0; i < per_file[f]; ++i, ++index) {
        ExampleBuilder b;
        const float v = float(index);
        const int64_t label = index % 10;
        b.add_floats("v", &v, 1);
        b.add_int64s("label", &label, 1);
        records.push_back(b.serialize());
      }
      files.push_back(write_file("part-" + std::to_string(f), records));
    }
    total_ = index;
    return files;
  }

  // One epoch of a pipeline, read to its end.
  struct Drained {
    std::vector<float> values;  // every example's value, in order
    std::string error;          // what ended it early ("" if nothing)
    uint64_t skipped = 0, shard_records = 0;
  };
  Drained drain(const RecordPipelineOptions& options, uint32_t number = 0) {
    Drained out;
    auto pipeline = RecordPipeline::create(schema_, columns_, options);
    if (!pipeline.ok()) {
      out.error = "create: " + pipeline.status().message();
      return out;
    }
    out.shard_records = (*pipeline)->shard_records();
    (*pipeline)->start_epoch(number);
    Batch batch;
    for (;;) {
      auto more = (*pipeline)->next(batch);
      if (!more.ok()) {
        out.error = more.status().message();
        return out;
      }
      if (!*more) break;
      EXPECT_EQ(batch.size, options.batch_size);
      for (uint32_t i = 0; i < batch.size; ++i) EXPECT_EQ(batch.labels[i], uint32_t(batch.values[i]) % 10);
      out.values.insert(out.values.end(), batch.values.begin(), batch.values.end());
    }
    out.skipped = (*pipeline)->skipped();
    return out;
  }

  // Every value an epoch yields, in order; it must end without an error.
  std::vector<float> epoch(const RecordPipelineOptions& options, uint32_t number = 0) {
    Drained out = drain(options, number);
    EXPECT_EQ(out.error, "");
    return out.values;
  }

  ExampleSchema schema_;
  ExampleColumns columns_;
  uint32_t total_ = 0;
};

TEST_F(Pipelines, ShardsAreDisjointAndCoverEveryRecordOnce) {
  // Shard counts below, at and above the file count (by file, then by
  // record). Even files: every record once. Uneven files: every record in
  // exactly one shard's plan, none read twice, every shard the same number
  // of batches (the smallest shard's).
  for (const std::vector<uint32_t>& per_file :
       {std::vector<uint32_t>{12, 12, 12, 12, 12, 12}, std::vector<uint32_t>{13, 1, 0, 29, 7, 7, 20}}) {
    const bool even = per_file[0] == per_file[1];
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    const auto files = write_files(per_file);
    for (uint32_t shards : {1u, 2u, 3u, 6u, 7u, 11u}) {
      SCOPED_TRACE((even ? "even files, " : "uneven files, ") + std::to_string(shards) + " shards");
      std::map<float, uint32_t> seen;
      uint64_t planned = 0;
      std::set<std::size_t> sizes;
      for (uint32_t shard = 0; shard < shards; ++shard) {
        RecordPipelineOptions options;
        options.files = files;
        options.shard_index = shard;
        options.shard_count = shards;
        options.batch_size = 1;
        options.cycle_length = 3;
        options.threads = 2;
        options.shuffle_buffer = 5;
        options.seed = 42;
        const Drained shard_epoch = drain(options);
        ASSERT_EQ(shard_epoch.error, "");
        planned += shard_epoch.shard_records;
        sizes.insert(shard_epoch.values.size());
        for (float v : shard_epoch.values) ++seen[v];
      }
      EXPECT_EQ(planned, total_);
      EXPECT_EQ(sizes.size(), 1u) << "shards took different numbers of steps";
      for (const auto& [value, count] : seen) EXPECT_EQ(count, 1u) << "record " << value << " read twice";
      if (even && 72 % shards == 0) {
        EXPECT_EQ(seen.size(), total_);
      }
    }
  }
}

TEST_F(Pipelines, DeterministicWhateverTheThreadCount) {
  const auto files = write_files({50, 31, 77, 5, 64});
  RecordPipelineOptions options;
  options.files = files;
  options.batch_size = 16;
  options.cycle_length = 3;
  options.shuffle_buffer = 40;
  options.seed = 7;
  options.threads = 1;
  const std::vector<float> one = epoch(options);
  EXPECT_EQ(one.size(), std::size_t(227 / 16 * 16));  // the remainder dropped
  for (uint32_t threads : {2u, 3u}) {
    options.threads = threads;
    EXPECT_EQ(epoch(options), one) << threads << " threads";
  }
  EXPECT_NE(epoch(options, 1), one);  // another epoch, another order
  options.seed = 8;
  EXPECT_NE(epoch(options), one);
}

// Unshuffled, the order is the interleave itself: record by record over
// the cycle's files, a finished file's place taken by the next one. Files
// longer than the rows a reader keeps ahead, on one reader and on more,
// and rows taken off every shard's share of them, keep it.
TEST_F(Pipelines, InterleaveRecordByRecordOverLongFiles) {
  const std::vector<uint32_t> per_file = {700, 300, 1031, 40, 3};
  const auto files = write_files(per_file);
  const uint32_t cycle = 3;
  // The interleave, restated: the cycle's cursors over the files' first
  // indices, each file's records consecutive in index.
  std::vector<float> expected;
  {
    std::vector<uint32_t> first(per_file.size(), 0);
    for (std::size_t f = 1; f < per_file.size(); ++f) first[f] = first[f - 1] + per_file[f - 1];
    std::vector<int> slot(cycle, -1);
    std::vector<uint32_t> read(per_file.size(), 0);
    std::size_t next = 0;
    for (int& s : slot) s = next < per_file.size() ? int(next++) : -1;
    for (std::size_t cursor = 0; std::any_of(slot.begin(), slot.end(), [](int s) { return s >= 0; });) {
      int& s = slot[cursor];
      if (s >= 0 && read[s] == per_file[s]) {
        s = next < per_file.size() ? int(next++) : -1;
        continue;
      }
      if (s >= 0) expected.push_back(float(first[s] + read[s]++));
      cursor = (cursor + 1) % cycle;
    }
  }
  RecordPipelineOptions options;
  options.files = files;
  options.batch_size = 1;
  options.cycle_length = cycle;
  for (uint32_t threads : {1u, 2u, 3u}) {
    options.threads = threads;
    EXPECT_EQ(epoch(options), expected) << threads << " reader(s)";
  }
  // Three shards by record: each keeps every third of the same order.
  options.threads = 2;
  for (uint32_t shard = 0; shard < 3; ++shard) {
    options.shard_index = shard;
    options.shard_count = 3;
    std::vector<float> share;
    for (std::size_t i = shard; i < expected.size(); i += 3) share.push_back(expected[i]);
    share.resize(expected.size() / 3);  // every shard the smallest share's batches
    EXPECT_EQ(epoch(options), share) << "shard " << shard;
  }
}

// A row laid out unlike the schema's (the inputs in another order, a
// feature the model does not read) is gathered from the parsed values.
TEST_F(Pipelines, InputsInAnotherOrderThanTheSchemas) {
  std::vector<std::string> records;
  for (uint32_t i = 0; i < 40; ++i) {
    ExampleBuilder b;
    const int64_t label = i % 3;
    const float a[2] = {float(i), -float(i)}, unused = 0.5f, c = float(i) * 0.25f;
    b.add_int64s("label", &label, 1);
    b.add_floats("a", a, 2);
    b.add_floats("unused", &unused, 1);
    b.add_floats("c", &c, 1);
    records.push_back(b.serialize());
  }
  const std::vector<std::string> files = {write_file("layout", records)};
  const ExampleSchema schema =
      std::move(ExampleSchema::create(
                    {spec("label", FeatureType::kInt64, {}), spec("a", FeatureType::kFloat, {2}),
                     spec("unused", FeatureType::kFloat, {1}), spec("c", FeatureType::kFloat, {1})}))
          .value();
  RecordPipelineOptions options;
  options.files = files;
  options.batch_size = 8;
  auto pipeline = RecordPipeline::create(schema, {{"c", "a"}, "label", 3}, options);
  ASSERT_TRUE(pipeline.ok()) << pipeline.status().message();
  ASSERT_EQ((*pipeline)->example_values(), 3u);
  (*pipeline)->start_epoch(0);
  Batch batch;
  uint32_t i = 0;
  while (*(*pipeline)->next(batch))
    for (uint32_t e = 0; e < batch.size; ++e, ++i) {
      const std::vector<float> want = {float(i) * 0.25f, float(i), -float(i)};
      EXPECT_EQ(std::vector<float>(batch.values.begin() + 3 * e, batch.values.begin() + 3 * e + 3), want)
          << i;
      EXPECT_EQ(batch.labels[e], i % 3) << i;
    }
  EXPECT_EQ(i, 40u);
}

// The next epoch starts reading when an epoch's last batch goes out; its
// batches are those of that epoch started afresh, and an epoch asked for
// out of turn is read anew.
TEST_F(Pipelines, TheEpochReadAheadIsTheEpochItself) {
  RecordPipelineOptions options;
  options.files = write_files({300, 41, 517});
  options.batch_size = 10;
  options.shuffle_buffer = 64;
  options.threads = 2;
  auto pipeline = RecordPipeline::create(schema_, columns_, options);
  ASSERT_TRUE(pipeline.ok()) << pipeline.status().message();
  auto read = [&](uint32_t number) {
    (*pipeline)->start_epoch(number);
    std::vector<float> values;
    Batch batch;
    while (*(*pipeline)->next(batch)) values.insert(values.end(), batch.values.begin(), batch.values.end());
    return values;
  };
  for (uint32_t number : {0u, 1u, 2u, 5u, 4u})
    EXPECT_EQ(read(number), epoch(options, number)) << "epoch " << number;
}

TEST_F(Pipelines, CorruptRecordsAreNamedOrSkippedOnRequest) {
  auto files = write_files({10, 10});
  std::string bytes = read_all(files[1]);
  const std::size_t record_bytes = bytes.size() / 10;
  bytes[3 * record_bytes + 14] ^= 4;  // record 3's data
  write_all(files[1], bytes);
  RecordPipelineOptions options;
  options.files = files;
  options.batch_size = 4;
  const std::string error = drain(options).error;
  EXPECT_EQ(error.rfind(files[1] + ": record 3 at byte " + std::to_string(3 * record_bytes) +
                            ": corrupted record: data CRC mismatch",
                        0),
            0u)
      << error;
  options.skip_corrupt = true;
  options.shuffle_buffer = 0;  // records in interleave order
  const Drained skipping = drain(options);
  EXPECT_EQ(skipping.error, "");
  EXPECT_EQ(skipping.skipped, 1u);
  // 19 good records fill four batches of 4 and three quarters of a fifth:
  // the epoch keeps its five batches, the first record standing in for the
  // skipped one.
  const std::size_t per_record = skipping.values.size() / 20;
  ASSERT_EQ(skipping.values.size(), 20 * per_record);
  EXPECT_TRUE(std::equal(skipping.values.end() - per_record, skipping.values.end(), skipping.values.begin()));
}

// A read that fails mid-epoch (EIO, injected at the reader's fault point)
// ends the epoch with an error naming the file and the record, even with
// skip_corrupt: a failing disk is not a corrupt record.
TEST_F(Pipelines, AReadFailureMidEpochReachesTheConsumer) {
  const auto files = write_files({10, 10});
  const std::size_t record_bytes = read_all(files[1]).size() / 10;
  RecordPipelineOptions options;
  options.files = files;
  options.batch_size = 4;
  options.threads = 2;
  for (bool skip_corrupt : {false, true}) {
    SCOPED_TRACE(skip_corrupt ? "skip_corrupt" : "strict");
    options.skip_corrupt = skip_corrupt;
    // Three reads a record (header, data, footer): the 7th is record 2's header.
    ASSERT_TRUE(arm_faults("tfrecord.read:part-1@7=error").ok());
    const Drained drained = drain(options);
    ASSERT_TRUE(arm_faults("").ok());
    EXPECT_EQ(drained.error, files[1] + ": record 2 at byte " + std::to_string(2 * record_bytes) +
                                 ": read failed: Input/output error");
  }
  EXPECT_EQ(epoch(options).size(), 20u);  // disarmed, the epoch is whole
}

TEST_F(Pipelines, SkippedRecordsLeaveEveryShardItsBatches) {
  // Three shards of 24 records, batches of 4: six batches each. Shard 1
  // loses three records to corruption, which would leave it five and a
  // quarter batches and a job whose ranks disagree on the epoch's length.
  auto files = write_files({24, 24, 24});
  std::string bytes = read_all(files[1]);
  const std::size_t record_bytes = bytes.size() / 24;
  for (std::size_t r : {2, 9, 17}) bytes[r * record_bytes + 14] ^= 4;
  write_all(files[1], bytes);
  RecordPipelineOptions options;
  options.files = files;
  options.batch_size = 4;
  options.skip_corrupt = true;
  options.shard_count = 3;
  std::vector<std::size_t> sizes;
  for (uint32_t shard = 0; shard < 3; ++shard) {
    options.shard_index = shard;
    const Drained drained = drain(options);
    EXPECT_EQ(drained.error, "") << "shard " << shard;
    EXPECT_EQ(drained.skipped, shard == 1 ? 3u : 0u) << "shard " << shard;
    sizes.push_back(drained.values.size());
  }
  EXPECT_EQ(sizes[0], sizes[1]);
  EXPECT_EQ(sizes[1], sizes[2]);
}

// One pipeline per replica: the batches of a job's replicas are the same
// whether one process holds all four or two processes two each, and every
// record is read once an epoch (3 files over 4 replicas: by record).
TEST_F(Pipelines, ReplicaShardsDoNotDependOnTheProcessLayout) {
  const auto files = write_files({30, 17, 25});
  RecordPipelineOptions options;
  options.files = files;
  options.batch_size = 8;
  options.shuffle_buffer = 12;
  options.seed = 3;
  auto plan = RecordPipeline::create(schema_, columns_, options);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  auto epoch_of = [&](uint32_t first, uint32_t local) {
    auto source = PipelineSource::per_replica(**plan, first, local, 4, 2, 3);
    EXPECT_TRUE(source.ok()) << source.status().to_string();
    std::vector<std::vector<float>> batches;
    if (!source.ok()) return batches;
    EXPECT_EQ((*source)->batches_per_epoch(), 72u / 4 / 2);
    EXPECT_TRUE((*source)->start_epoch(1).ok());
    Batch batch;
    while (*(*source)->next(batch)) {
      EXPECT_EQ(batch.size, 2 * local);
      batches.push_back(batch.values);
    }
    return batches;
  };
  const auto whole = epoch_of(0, 4), front = epoch_of(0, 2), back = epoch_of(2, 2);
  ASSERT_EQ(whole.size(), 9u);
  ASSERT_EQ(front.size(), whole.size());
  ASSERT_EQ(back.size(), whole.size());
  std::set<float> seen;
  for (std::size_t b = 0; b < whole.size(); ++b) {
    std::vector<float> joined = front[b];
    joined.insert(joined.end(), back[b].begin(), back[b].end());
    EXPECT_EQ(joined, whole[b]) << "batch " << b;
    seen.insert(whole[b].begin(), whole[b].end());
  }
  EXPECT_EQ(seen.size(), 72u) << "each record once";
  // A shard smaller than a replica's batch is named.
  auto starved = PipelineSource::per_replica(**plan, 0, 1, 4, 19, 0);
  EXPECT_EQ(starved.status().message(),
            "a batch of 19 per replica is more than the 18 training record(s) of replica 0's shard (of 4): "
            "no batch "
            "to train on");
}

TEST_F(Pipelines, LabelsOutsideTheClassesAreNamed) {
  const auto files = write_files({12});
  columns_.classes = 5;  // labels go to 9
  RecordPipelineOptions options;
  options.files = files;
  options.batch_size = 2;
  const std::string error = drain(options).error;
  EXPECT_NE(error.find(files[0] + ": record 5 at byte "), std::string::npos) << error;
  EXPECT_NE(error.find("feature 'label': label 5"), std::string::npos) << error;
}

// Files of interactions {"user": u, "item": 100 + (u * 7) % 13, "label": 1},
// one per user; negatives replace "item".
class SampledNegatives : public testing::TFRecordFileTest {
 protected:
  void SetUp() override {
    TFRecordFileTest::SetUp();
    schema_ = std::move(ExampleSchema::create({spec("user", FeatureType::kFloat, {}),
                                               spec("item", FeatureType::kFloat, {}),
                                               spec("label", FeatureType::kInt64, {})}))
                  .value();
    uint32_t user = 0;
    for (uint32_t per_file : {20u, 7u, 33u}) {
      std::vector<std::string> records;
      for (uint32_t i = 0; i < per_file; ++i, ++user) records.push_back(interaction(user, 1));
      options_.files.push_back(write_file("part-" + std::to_string(options_.files.size()), records));
    }
    options_.batch_size = 8;
    options_.cycle_length = 2;
    options_.threads = 2;
    options_.shuffle_buffer = 16;
    options_.seed = 3;
    options_.negatives = 3;
    options_.negative_feature = "item";
  }

  static float item_of(uint32_t user) { return float(100 + (user * 7) % 13); }
  static std::string interaction(uint32_t user, int64_t label) {
    ExampleBuilder b;
    const float u = float(user), item = item_of(user);
    b.add_floats("user", &u, 1);
    b.add_floats("item", &item, 1);
    b.add_int64s("label", &label, 1);
    return b.serialize();
  }

  // An epoch's (user, item, label) triples; the error if it ends in one.
  std::string drain(uint32_t number, std::vector<std::array<float, 3>>& out) {
    out.clear();
    auto pipeline = RecordPipeline::create(schema_, columns_, options_);
    if (!pipeline.ok()) return pipeline.status().message();
    (*pipeline)->start_epoch(number);
    Batch batch;
    for (;;) {
      auto more = (*pipeline)->next(batch);
      if (!more.ok()) return more.status().message();
      if (!*more) return "";
      for (uint32_t i = 0; i < batch.size; ++i)
        out.push_back({batch.values[2 * i], batch.values[2 * i + 1], float(batch.labels[i])});
    }
  }

  ExampleSchema schema_;
  ExampleColumns columns_{{"user", "item"}, "label", 2};
  RecordPipelineOptions options_;
};

TEST_F(SampledNegatives, EachPositiveGetsFreshNegativesFromTheFeaturesValues) {
  std::set<float> items;
  for (uint32_t user = 0; user < 60; ++user) items.insert(item_of(user));
  std::vector<std::array<float, 3>> first, again, other_threads, second;
  ASSERT_EQ(drain(0, first), "");
  EXPECT_EQ(first.size(), std::size_t(60 * 4 / 8 * 8));  // 60 positives, 3 negatives each
  std::map<float, uint32_t> positives, negatives;
  for (const auto& [user, item, label] : first) {
    EXPECT_TRUE(items.count(item)) << "item " << item << " is not a value of the feature";
    if (label == 1) {
      EXPECT_EQ(item, item_of(uint32_t(user)));
      ++positives[user];
    } else {
      ++negatives[user];
    }
  }
  EXPECT_EQ(positives.size(), 60u);
  for (const auto& [user, count] : negatives) EXPECT_EQ(count, 3u) << "user " << user;
  // Deterministic whatever the thread count; new draws each epoch.
  ASSERT_EQ(drain(0, again), "");
  EXPECT_EQ(again, first);
  options_.threads = 1;
  ASSERT_EQ(drain(0, other_threads), "");
  EXPECT_EQ(other_threads, first);
  ASSERT_EQ(drain(1, second), "");
  std::multiset<std::pair<float, float>> pairs_0, pairs_1;
  for (const auto& [user, item, label] : first)
    if (label == 0) pairs_0.insert({user, item});
  for (const auto& [user, item, label] : second)
    if (label == 0) pairs_1.insert({user, item});
  EXPECT_NE(pairs_0, pairs_1) << "epoch 1 drew the negatives of epoch 0";
  // Shards (by record: more shards than files) draw from the same values
  // and take every positive at most once; each keeps 56 of its 60 examples.
  std::map<float, uint32_t> sharded;
  options_.shard_count = 4;
  for (options_.shard_index = 0; options_.shard_index < 4; ++options_.shard_index) {
    std::vector<std::array<float, 3>> shard;
    ASSERT_EQ(drain(0, shard), "");
    EXPECT_EQ(shard.size(), 56u);
    for (const auto& [user, item, label] : shard) {
      EXPECT_TRUE(items.count(item));
      if (label == 1) ++sharded[user];
    }
  }
  EXPECT_GE(sharded.size(), 4u * (15 - 4));
  for (const auto& [user, count] : sharded) EXPECT_EQ(count, 1u) << "user " << user;
}

TEST_F(SampledNegatives, ErrorsNameTheRecordAndTheFeature) {
  write_file("part-1", {interaction(20, 1), interaction(21, 0)});
  std::vector<std::array<float, 3>> out;
  std::string error = drain(0, out);
  EXPECT_NE(error.find(options_.files[1] + ": record 1 at byte "), std::string::npos) << error;
  EXPECT_NE(error.find("label 0.000000 in a file of positives"), std::string::npos) << error;
  options_.negative_feature = "label";
  error = drain(0, out);
  EXPECT_EQ(error, "negatives: feature 'label' is not one of the inputs");
}

TEST_F(Pipelines, LoadsADatasetInFileOrder) {
  const auto files = write_files({3, 4});
  auto data = load_tfrecord_dataset(files, schema_, columns_);
  ASSERT_TRUE(data.ok()) << data.status().message();
  EXPECT_EQ(data->examples, 7u);
  EXPECT_EQ(data->values, (std::vector<float>{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(data->labels, (std::vector<float>{0, 1, 2, 3, 4, 5, 6}));
}

}  // namespace
}  // namespace systole
