// SPDX-License-Identifier: Apache-2.0
// TFRecord files (plain and compressed), TensorBoard event files and the
// record pipeline (label unit): the frame layout byte for byte, every
// corruption named, Events against hand-built bytes, and the pipeline's
// sharding, determinism and sampled negatives. The Example schema's own
// tests are in example_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include "common/feature_spec.h"
#include "common/temp_dir_test.h"
#include "systole/fault_points.h"
#include "systole/fit.h"
#include "systole/record_pipeline.h"
#include "systole/summary_writer.h"
#include "systole/tf_example.h"
#include "systole/tfrecord.h"

namespace systole {
namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_all(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

using testing::spec;

class TFRecords : public testing::TempDirTest {
 protected:
  // A file of `records`, returning its path.
  std::string write_file(const std::string& name, const std::vector<std::string>& records) {
    auto writer = TFRecordWriter::create(path(name));
    EXPECT_TRUE(writer.ok()) << writer.status().message();
    for (const std::string& record : records) EXPECT_TRUE(writer->write(record).ok());
    EXPECT_TRUE(writer->close().ok());
    return path(name);
  }

  // Every record of a file, or the first error's message.
  static std::string read_records(const std::string& file, std::vector<std::string>* records = nullptr) {
    auto reader = TFRecordReader::open(file);
    if (!reader.ok()) return reader.status().message();
    std::string record;
    for (;;) {
      auto more = reader->next(record);
      if (!more.ok()) return more.status().message();
      if (!*more) return "";
      if (records) records->push_back(record);
    }
  }
};

TEST(Crc32c, KnownValuesAndMask) {
  // The CRC-32C check value (RFC 3720's "123456789"), and 32 zero bytes
  // (RFC 3720, B.4).
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);
  for (std::size_t split = 0; split <= 9; ++split)
    EXPECT_EQ(crc32c_extend(crc32c("123456789", split), "123456789" + split, 9 - split), 0xE3069283u)
        << split;
  const std::string zeros(32, '\0');
  EXPECT_EQ(crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
  // Masking: rotate right by 15, add 0xa282ead8.
  EXPECT_EQ(mask_crc32c(0), 0xa282ead8u);
  EXPECT_EQ(mask_crc32c(0x00008000u), 0xa282ead9u);
}

TEST_F(TFRecords, FrameLayoutAndRoundTrip) {
  const std::vector<std::string> records = {"", "a", std::string(70000, 'x') + "end",
                                            std::string("\0\1\2", 3)};
  const std::string file = write_file("f.tfrecord", records);
  const std::string bytes = read_all(file);
  std::size_t expected = 0;
  for (const std::string& r : records) expected += 16 + r.size();
  ASSERT_EQ(bytes.size(), expected);
  // Record 1 ("a") starts at 16: length 1, masked CRC of the length bytes,
  // the data, the masked CRC of the data, all little-endian.
  const char* frame = bytes.data() + 16;
  uint64_t length;
  uint32_t length_crc, data_crc;
  std::memcpy(&length, frame, 8);
  std::memcpy(&length_crc, frame + 8, 4);
  std::memcpy(&data_crc, frame + 13, 4);
  EXPECT_EQ(length, 1u);
  EXPECT_EQ(length_crc, mask_crc32c(crc32c(frame, 8)));
  EXPECT_EQ(frame[12], 'a');
  EXPECT_EQ(data_crc, mask_crc32c(crc32c("a", 1)));

  std::vector<std::string> back;
  EXPECT_EQ(read_records(file, &back), "");
  EXPECT_EQ(back, records);
  auto count = count_tfrecords(file);
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(*count, records.size());
  // Nothing but the file itself is left in the directory.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_), {}), 1);
}

TEST_F(TFRecords, EveryBitFlipIsNamed) {
  const std::string file = write_file("f.tfrecord", {"first", "second!"});
  const std::string good = read_all(file);
  const std::size_t second = 16 + 5;  // the second record's offset
  for (std::size_t byte = second; byte < good.size(); ++byte)
    for (int bit = 0; bit < 8; bit += 3) {
      std::string bad = good;
      bad[byte] = char(bad[byte] ^ (1 << bit));
      write_all(path("bad"), bad);
      const std::string error = read_records(path("bad"));
      const std::string where = path("bad") + ": record 1 at byte 21: ";
      SCOPED_TRACE("byte " + std::to_string(byte) + " bit " + std::to_string(bit));
      ASSERT_EQ(error.rfind(where, 0), 0u) << error;
      const std::string what = error.substr(where.size());
      if (byte < second + 12)
        EXPECT_EQ(what.rfind("corrupted record: length CRC mismatch", 0), 0u) << what;
      else
        EXPECT_EQ(what.rfind("corrupted record: data CRC mismatch", 0), 0u) << what;
    }
}

TEST_F(TFRecords, EveryTruncationIsNamed) {
  const std::string file = write_file("f.tfrecord", {"first", "second!"});
  const std::string good = read_all(file);
  for (std::size_t size = 1; size < good.size(); ++size) {
    if (size == 21) continue;  // a whole first record: a valid file
    write_all(path("cut"), good.substr(0, size));
    const uint64_t at = size < 21 ? 0 : 21;
    const std::string where = path("cut") + ": record " + std::to_string(at ? 1 : 0) + " at byte " +
                              std::to_string(at) + ": truncated: ";
    const std::string error = read_records(path("cut"));
    EXPECT_EQ(error.rfind(where, 0), 0u) << "size " << size << ": " << error;
    auto count = count_tfrecords(path("cut"));
    ASSERT_FALSE(count.ok());
    EXPECT_EQ(count.status().message().rfind(where, 0), 0u) << count.status().message();
  }
}

TEST_F(TFRecords, DataErrorLeavesTheReaderPastTheRecord) {
  const std::string file = write_file("f.tfrecord", {"one", "two", "three"});
  std::string bytes = read_all(file);
  bytes[16 + 3 + 12] ^= 1;  // record 1's data
  write_all(file, bytes);
  auto reader = TFRecordReader::open(file);
  ASSERT_TRUE(reader.ok());
  std::string record;
  auto first = reader->next(record);
  EXPECT_TRUE(first.ok() && *first);
  auto bad = reader->next(record);
  EXPECT_EQ(bad.status().code(), StatusCode::kDataLoss);
  auto after = reader->next(record);
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(*after);
  EXPECT_EQ(record, "three");
}

// GZIP and ZLIB files as TFRecordOptions writes them: one stream over the
// framed records. Round trips of awkward record sizes (empty, one byte,
// larger than the reader's buffer), counting, detection by the first
// bytes, and damage named by record and offset in the uncompressed stream.
TEST_F(TFRecords, CompressedFilesRoundTripAndNameTheirDamage) {
  std::vector<std::string> records = {"", "x", std::string(300000, 'a'), "last"};
  std::mt19937 rng(41);
  for (char& c : records[2]) c = char('a' + rng() % 7);  // compressible, not trivially
  for (Compression compression : {Compression::kGzip, Compression::kZlib}) {
    SCOPED_TRACE(compression_name(compression));
    const std::string file = path(std::string("c.") + compression_name(compression));
    auto writer = TFRecordWriter::create(file, compression);
    ASSERT_TRUE(writer.ok()) << writer.status().message();
    for (const std::string& record : records) ASSERT_TRUE(writer->write(record).ok());
    ASSERT_TRUE(writer->close().ok());
    const std::string bytes = read_all(file);
    ASSERT_LT(bytes.size(), 200000u) << "not compressed";
    if (compression == Compression::kGzip) {
      EXPECT_EQ(bytes.substr(0, 2), "\x1f\x8b");
    }
    for (Compression reading : {compression, Compression::kAuto}) {
      auto reader = TFRecordReader::open(file, reading);
      ASSERT_TRUE(reader.ok());
      EXPECT_EQ(reader->compression(), compression);
      std::string record;
      for (const std::string& expected : records) {
        ASSERT_TRUE(reader->next(record).value());
        EXPECT_EQ(record, expected);
      }
      EXPECT_FALSE(reader->next(record).value());
      EXPECT_EQ(reader->offset(), 4 * 16 + 0 + 1 + 300000 + 4u);  // the uncompressed stream
    }
    EXPECT_EQ(count_tfrecords(file, Compression::kAuto).value(), 4u);
    // Read as uncompressed: a frame error that says what the file looks like.
    const std::string plain_error = read_records(file);
    EXPECT_NE(
        plain_error.find(std::string("the file starts like ") + compression_name(compression) +
                         " data: read it with compression " + compression_name(compression) + " (or auto)"),
        std::string::npos)
        << plain_error;
    // Cut short: named with the record and its offset in the stream.
    write_all(file, bytes.substr(0, bytes.size() / 2));
    auto reader = TFRecordReader::open(file, compression);
    std::string record;
    EXPECT_TRUE(reader->next(record).value());
    EXPECT_TRUE(reader->next(record).value());
    const Status cut = reader->next(record).status();
    EXPECT_EQ(cut.message().rfind(file + ": record 2 at byte 33: ", 0), 0u) << cut.message();
    // A flipped byte in the compressed data: an error, never wrong records.
    std::string flipped = bytes;
    flipped[flipped.size() / 3] ^= 0x55;
    write_all(file, flipped);
    EXPECT_NE(read_records(file.c_str()), "") << "damage went unnoticed";
  }
  // An uncompressed file is read as such by auto.
  const std::string plain = write_file("plain.tfrecord", records);
  EXPECT_EQ(TFRecordReader::open(plain, Compression::kAuto)->compression(), Compression::kNone);
  EXPECT_EQ(count_tfrecords(plain, Compression::kAuto).value(), 4u);
  EXPECT_EQ(TFRecordWriter::create(path("x"), Compression::kAuto).status().message(),
            path("x") + ": a file is written as none, gzip or zlib, not auto");
  EXPECT_EQ(parse_compression("bz2").status().message(),
            "unknown compression 'bz2' (expected none, gzip, zlib or auto)");
}

TEST_F(TFRecords, RefusesWhatIsNotARegularFile) {
  EXPECT_EQ(read_records(dir_.string()), dir_.string() + ": not a regular file");
  EXPECT_EQ(read_records(path("missing")).rfind(path("missing") + ": cannot open", 0), 0u);
  auto none = match_files({path("*.tfrecord")});
  EXPECT_EQ(none.status().message(), path("*.tfrecord") + ": matches no regular file");
  write_file("b.tfrecord", {});
  write_file("a.tfrecord", {});
  auto both = match_files({path("*.tfrecord"), path("a.tfrecord")});
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(*both, (std::vector<std::string>{path("a.tfrecord"), path("b.tfrecord")}));
}

// TensorBoard event files: the Event bytes checked against the wire format
// written out by hand (field numbers: Event.wall_time 1, step 2,
// file_version 3, summary 5; Summary.value 1; Value.tag 1, simple_value 2),
// read back, and a flipped bit named.
TEST_F(TFRecords, EventFilesHoldTensorBoardsMessages) {
  auto writer = SummaryWriter::create(path("logs/train"));
  ASSERT_TRUE(writer.ok()) << writer.status().message();
  const std::string file = writer->path();
  EXPECT_NE(file.find("/logs/train/events.out.tfevents."), std::string::npos) << file;
  EXPECT_EQ(file.substr(file.size() - 3), ".v2");
  ASSERT_TRUE(writer->scalar("epoch_loss", 0.5f, 7).ok());
  ASSERT_TRUE(writer->scalar("batch_accuracy", 0.25f, 300).ok());
  ASSERT_TRUE(writer->flush().ok());

  std::vector<std::string> records;
  ASSERT_EQ(read_records(file, &records), "");
  ASSERT_EQ(records.size(), 3u);
  // file_version: 0x09 wall_time (8 bytes), 0x1a length "brain.Event:2".
  ASSERT_EQ(records[0].size(), 9u + 2 + 13);
  EXPECT_EQ(records[0][0], '\x09');
  EXPECT_EQ(records[0].substr(9), std::string("\x1a\x0d") + "brain.Event:2");
  // A scalar: wall_time, 0x10 step, 0x2a Summary { 0x0a Value { 0x0a tag,
  // 0x15 float32 } }.
  const std::string value = std::string("\x0a\x0a") + "epoch_loss" + std::string("\x15\x00\x00\x00\x3f", 5);
  const std::string summary = "\x0a" + std::string(1, char(value.size())) + value;
  EXPECT_EQ(records[1].substr(9), "\x10\x07\x2a" + std::string(1, char(summary.size())) + summary);
  EXPECT_EQ(records[2].substr(9, 3), "\x10\xac\x02");  // step 300 as a varint

  auto scalars = read_scalar_events(file);
  ASSERT_TRUE(scalars.ok()) << scalars.status().message();
  ASSERT_EQ(scalars->size(), 2u);
  EXPECT_EQ((*scalars)[0].tag, "epoch_loss");
  EXPECT_EQ((*scalars)[0].step, 7);
  EXPECT_EQ((*scalars)[0].value, 0.5f);
  EXPECT_EQ((*scalars)[1].tag, "batch_accuracy");
  EXPECT_EQ((*scalars)[1].step, 300);
  EXPECT_GT((*scalars)[1].wall_time, 1.7e9);

  std::string bytes = read_all(file);
  const std::size_t second = 12 + records[0].size() + 4;
  bytes[second + 12 + 10] ^= 1;  // inside record 1's data
  write_all(file, bytes);
  EXPECT_EQ(
      read_scalar_events(file).status().message().rfind(
          file + ": record 1 at byte " + std::to_string(second) + ": corrupted record: data CRC mismatch", 0),
      0u);
  // Another run's writer never reuses a file.
  auto another = SummaryWriter::create(path("logs/train"));
  ASSERT_TRUE(another.ok());
  EXPECT_NE(another->path(), file);
}

// Protobuf fields written out by hand: a tag byte, then a varint length
// and the bytes (wire type 2).
std::string field(uint8_t tag, const std::string& bytes) {
  std::string out(1, char(tag));
  for (std::size_t n = bytes.size();; n >>= 7) {
    out += char((n & 0x7f) | (n >= 0x80 ? 0x80 : 0));
    if (n < 0x80) break;
  }
  return out + bytes;
}

// An event file as TensorFlow 2 writes it (tf.summary.scalar, Keras'
// TensorBoard callback): scalars as rank-0 tensors, beside a histogram and
// a text summary, all in bytes written here from TensorFlow's field
// numbers, not by this project's writer.
TEST_F(TFRecords, TensorFlow2ScalarsAreReadFromTheirTensors) {
  const std::string wall_time = std::string("\x09", 1) + std::string(8, '\0');
  const std::string version = wall_time + field(0x1a, "brain.Event:2");
  const std::string scalars_plugin =
      field(0x4a, field(0x0a, field(0x0a, "scalars")));  // metadata.plugin_data
  const std::string float_tensor =                       // dtype DT_FLOAT, shape [], tensor_content 0.25f
      field(0x42,
            std::string("\x08\x01", 2) + field(0x12, "") + field(0x22, std::string("\x00\x00\x80\x3e", 4)));
  const std::string double_tensor =  // dtype DT_DOUBLE, shape [], double_val [0.1]
      field(0x42, std::string("\x08\x02", 2) + field(0x12, "") +
                      field(0x32, std::string("\x9a\x99\x99\x99\x99\x99\xb9\x3f", 8)));
  const std::string data_class_scalar = field(0x4a, std::string("\x20\x01", 2));
  const std::string histogram =
      field(0x2a, std::string("\x08\x00", 2)) + field(0x4a, field(0x0a, field(0x0a, "histograms")));
  const std::string text = field(0x42, std::string("\x08\x07", 2) + field(0x12, "") + field(0x42, "hello")) +
                           field(0x4a, field(0x0a, field(0x0a, "text")));
  const std::string summary = field(0x0a, field(0x0a, "epoch_loss") + float_tensor + scalars_plugin) +
                              field(0x0a, field(0x0a, "learning_rate") + double_tensor + data_class_scalar) +
                              field(0x0a, field(0x0a, "weights") + histogram) +
                              field(0x0a, field(0x0a, "notes") + text);
  const std::string file =
      write_file("tf2.tfevents", {version, wall_time + "\x10\x05" + field(0x2a, summary)});
  auto contents = read_event_file(file);
  ASSERT_TRUE(contents.ok()) << contents.status().message();
  ASSERT_EQ(contents->scalars.size(), 2u);
  EXPECT_EQ(contents->scalars[0].tag, "epoch_loss");
  EXPECT_EQ(contents->scalars[0].step, 5);
  EXPECT_EQ(contents->scalars[0].value, 0.25);
  EXPECT_TRUE(contents->scalars[0].single);
  EXPECT_EQ(contents->scalars[1].tag, "learning_rate");
  EXPECT_EQ(contents->scalars[1].value, 0.1);
  EXPECT_FALSE(contents->scalars[1].single);
  EXPECT_EQ(contents->other, (std::vector<std::pair<std::string, uint64_t>>{{"histograms", 1}, {"text", 1}}));

  // A scalar whose tensor has a dimension, or too few bytes: named.
  const std::string ranked =
      field(0x42, std::string("\x08\x01", 2) + field(0x12, field(0x12, std::string("\x08\x02", 2))) +
                      field(0x22, std::string(8, '\0')));
  const std::string bad = write_file(
      "bad.tfevents",
      {version, wall_time + field(0x2a, field(0x0a, field(0x0a, "loss") + ranked + scalars_plugin))});
  EXPECT_EQ(read_event_file(bad).status().message(),
            bad + ": record 1 at byte " + std::to_string(12 + version.size() + 4) +
                ": scalar summary 'loss': a tensor of rank 1, not 0");
  const std::string short_content =
      field(0x42, std::string("\x08\x01", 2) + field(0x22, std::string(2, '\0')));
  const std::string truncated = write_file(
      "short.tfevents",
      {version, wall_time + field(0x2a, field(0x0a, field(0x0a, "loss") + short_content + scalars_plugin))});
  EXPECT_NE(read_event_file(truncated).status().message().find(
                "scalar summary 'loss': tensor_content holds 2 bytes, a scalar of its dtype 4"),
            std::string::npos);
}

// Files of examples {"v": [index], "label": index % 10}, `per_file[i]`
// records in file i; every record's index is unique.
class Pipelines : public TFRecords {
 protected:
  void SetUp() override {
    TFRecords::SetUp();
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
class SampledNegatives : public TFRecords {
 protected:
  void SetUp() override {
    TFRecords::SetUp();
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
