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
//
// A file may be compressed as a whole, as TFRecordOptions(compression_type=
// "GZIP" or "ZLIB") writes it: the framed records are one gzip (RFC 1952)
// or zlib (RFC 1950) stream, deflated and inflated through zlib as they go
// (no whole-file inflation). Offsets in errors are then offsets in the
// uncompressed stream.
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

// How a file's bytes hold the framed records. kAuto, for reading, takes a
// file whose first 12 bytes are a valid frame header as uncompressed, else
// gzip by its magic (1f 8b) or zlib by its header check.
enum class Compression { kNone, kGzip, kZlib, kAuto };
Result<Compression> parse_compression(const std::string& name);  // none, gzip, zlib, auto
const char* compression_name(Compression compression);

// What frames a record's data: before it, the length and its masked CRC;
// after it, the data's masked CRC.
struct TFRecordFrame {
  uint8_t header[kTFRecordHeaderBytes];
  uint8_t footer[kTFRecordFooterBytes];
};
TFRecordFrame tfrecord_frame(std::string_view record);

// Writes `path` record by record (gzip or zlib: deflated at zlib's default
// level as it goes); the file appears, complete, on close().
class TFRecordWriter {
 public:
  static Result<TFRecordWriter> create(const std::string& path, Compression compression = Compression::kNone);
  TFRecordWriter(TFRecordWriter&&) noexcept;
  TFRecordWriter& operator=(TFRecordWriter&&) noexcept;
  ~TFRecordWriter();
  Status write(std::string_view record);
  Status close();  // sync() and publish()
  // Ends the compressed stream and syncs the temporary file (OutputFile).
  Status sync();
  // Puts the synced file in place.
  Status publish();
  uint64_t records() const { return records_; }

 private:
  struct Deflater;
  TFRecordWriter(OutputFile file, std::unique_ptr<Deflater> deflater);
  Status put(const void* data, std::size_t bytes);  // through the deflater, if any
  OutputFile file_;
  std::unique_ptr<Deflater> deflater_;
  uint64_t records_ = 0;
};

// Reads a TFRecord file front to back. Every frame is checked: its length
// against the bytes left in the file, both CRCs. A failure is a kDataLoss
// error naming the file, the record's index and its byte offset (the
// anchor is TensorFlow's DataLossError "corrupted record at <offset>"); a
// failed read (EIO) is kUnavailable, located the same way.
class TFRecordReader {
 public:
  // A compressed file read as kNone fails at its first record with an
  // error that says it looks compressed and how to read it.
  static Result<TFRecordReader> open(const std::string& path, Compression compression = Compression::kNone);
  TFRecordReader(TFRecordReader&&) noexcept;
  TFRecordReader& operator=(TFRecordReader&&) noexcept;
  ~TFRecordReader();

  // The next record into `record`; false at the end of the file. After an
  // error in a record's data (its frame intact), the reader is past that
  // record and may go on; after an error in a frame, it is at the end.
  Result<bool> next(std::string& record);

  // The next record's frame, its data's CRC unchecked (counting).
  Result<bool> skip();

  const std::string& path() const { return path_; }
  uint64_t file_bytes() const { return file_bytes_; }  // on disk
  uint64_t offset() const { return offset_; }          // of the next record, in the (uncompressed) stream
  uint64_t records_read() const { return index_; }     // records passed so far
  Compression compression() const { return compression_; }  // kAuto resolved

 private:
  struct Closer {
    void operator()(std::FILE* file) const { std::fclose(file); }
  };
  struct Inflater;
  TFRecordReader(std::string path, std::FILE* file, uint64_t bytes, Compression compression);
  // `what`, naming the file, the record's index and its offset.
  Status located(StatusCode code, const std::string& what) const;
  Result<bool> read_record(std::string& record, bool check_data);
  // Up to `bytes` bytes of the stream into `into`: fewer only at its end.
  Result<std::size_t> read(void* into, std::size_t bytes);
  // Up to `bytes` bytes of the file (a read error is kUnavailable; fault
  // point tfrecord.read).
  Result<std::size_t> read_file(void* into, std::size_t bytes);

  std::string path_;
  std::unique_ptr<std::FILE, Closer> file_;
  uint64_t file_bytes_ = 0;
  Compression compression_ = Compression::kNone;
  std::unique_ptr<Inflater> inflater_;
  bool ended_ = false;  // a frame error or the stream's end
  uint64_t offset_ = 0;
  uint64_t index_ = 0;
};

// The records of a file, counted from the frames alone (lengths and their
// CRCs checked, data skipped; a compressed file is inflated to find them).
Result<uint64_t> count_tfrecords(const std::string& path, Compression compression = Compression::kNone);

// The regular files that match each shell pattern (glob(7)), sorted, with
// no file twice. A pattern that matches nothing is an error naming it.
Result<std::vector<std::string>> match_files(const std::vector<std::string>& patterns);

}  // namespace systole
