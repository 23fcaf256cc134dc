// SPDX-License-Identifier: Apache-2.0
// TFRecord files, as TensorFlow writes and reads them: a sequence of
// records, each framed as
//
//   uint64 length (little-endian)
//   uint32 masked CRC-32C of the 8 length bytes
//   length bytes of data
//   uint32 masked CRC-32C of the data
//
// where masking is TensorFlow's: rotate the CRC right by 15 bits and add
// 0xa282ead8 (mod 2^32). The CRC-32C comes from Boost.CRC.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "systole/output_file.h"
#include "systole/status.h"

namespace systole {

// CRC-32C (Castagnoli, reflected, as iSCSI and ext4 use) and its masked
// form.
uint32_t crc32c(const void* data, std::size_t bytes);
// The CRC-32C of a message that continues one whose CRC-32C is `crc`
// (crc32c_extend(crc32c(a), b) == crc32c(a + b); crc32c is extend from 0).
uint32_t crc32c_extend(uint32_t crc, const void* data, std::size_t bytes);
uint32_t mask_crc32c(uint32_t crc);

inline constexpr uint64_t kTFRecordHeaderBytes = 12;  // length + its CRC
inline constexpr uint64_t kTFRecordFooterBytes = 4;   // the data's CRC
// The longest record a reader accepts (TensorFlow has no limit; a length
// beyond this is treated as corruption rather than allocated).
inline constexpr uint64_t kTFRecordMaxBytes = 1ull << 30;

// What frames a record's data: before it, the length and its masked CRC;
// after it, the data's masked CRC.
struct TFRecordFrame {
  uint8_t header[kTFRecordHeaderBytes];
  uint8_t footer[kTFRecordFooterBytes];
};
TFRecordFrame tfrecord_frame(std::string_view record);

// Writes `path` record by record; the file appears, complete, on close().
class TFRecordWriter {
 public:
  static Result<TFRecordWriter> create(const std::string& path);
  Status write(std::string_view record);
  Status close();
  uint64_t records() const { return records_; }

 private:
  explicit TFRecordWriter(OutputFile file) : file_(std::move(file)) {}
  OutputFile file_;
  uint64_t records_ = 0;
};

// Reads a TFRecord file front to back. Every frame is checked: its length
// against the bytes left in the file, both CRCs. A failure is a kDataLoss
// error naming the file, the record's index and its byte offset (the
// anchor is TensorFlow's DataLossError "corrupted record at <offset>").
class TFRecordReader {
 public:
  static Result<TFRecordReader> open(const std::string& path);
  TFRecordReader(TFRecordReader&&) = default;
  TFRecordReader& operator=(TFRecordReader&&) = default;

  // The next record into `record`; false at the end of the file. After an
  // error in a record's data (its frame intact), the reader is past that
  // record and may go on; after an error in a frame, it is at the end.
  Result<bool> next(std::string& record);

  const std::string& path() const { return path_; }
  uint64_t file_bytes() const { return file_bytes_; }
  uint64_t offset() const { return offset_; }       // of the next record
  uint64_t records_read() const { return index_; }  // records passed so far

 private:
  struct Closer {
    void operator()(std::FILE* file) const { std::fclose(file); }
  };
  TFRecordReader(std::string path, std::FILE* file, uint64_t bytes)
      : path_(std::move(path)), file_(file), file_bytes_(bytes) {}
  Status corrupt(const std::string& what) const;

  std::string path_;
  std::unique_ptr<std::FILE, Closer> file_;
  uint64_t file_bytes_ = 0;
  uint64_t offset_ = 0;
  uint64_t index_ = 0;
};

// The records of a file, counted from the frames alone (lengths and their
// CRCs checked, data skipped).
Result<uint64_t> count_tfrecords(const std::string& path);

// The regular files that match each shell pattern (glob(7)), sorted, with
// no file twice. A pattern that matches nothing is an error naming it.
Result<std::vector<std::string>> match_files(const std::vector<std::string>& patterns);

}  // namespace systole
