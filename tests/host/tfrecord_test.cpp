// SPDX-License-Identifier: Apache-2.0
// TFRecord files (plain and compressed) and TensorBoard event files
// (label unit): the frame layout byte for byte, every corruption named,
// Events against hand-built bytes. The record pipeline's tests are in
// record_pipeline_test.cpp, the Example schema's in example_test.cpp.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <iterator>
#include <random>

#include "common/tfrecord_files.h"
#include "systole/summary_writer.h"
#include "systole/tfrecord.h"

namespace systole {
namespace {

using testing::read_all;
using testing::write_all;

class TFRecords : public testing::TFRecordFileTest {
 protected:
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

}  // namespace
}  // namespace systole
