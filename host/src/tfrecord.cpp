// SPDX-License-Identifier: Apache-2.0
// TFRecord framing over stdio, CRC-32C from Boost.CRC.
#include "systole/tfrecord.h"

#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/crc.hpp>
#include <cstring>

namespace systole {
namespace {

// CRC-32C: polynomial 0x1EDC6F41, reflected, initial and final XOR all ones.
using Crc32c = boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true>;

constexpr std::size_t kReadBufferBytes = 256 << 10;

void put_u32(uint8_t* out, uint32_t value) {
  for (int i = 0; i < 4; ++i) out[i] = uint8_t(value >> (8 * i));
}

uint32_t get_u32(const uint8_t* in) {
  uint32_t value = 0;
  for (int i = 0; i < 4; ++i) value |= uint32_t(in[i]) << (8 * i);
  return value;
}

std::string hex(uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", value);
  return text;
}

// The data length a frame header declares, or (non-empty) what is wrong
// with it; `left` counts the bytes from the header to the end of the file.
std::string check_header(const uint8_t* header, uint64_t left, uint64_t& length) {
  length = 0;
  for (int i = 0; i < 8; ++i) length |= uint64_t(header[i]) << (8 * i);
  const uint32_t stored = get_u32(header + 8);
  const uint32_t computed = mask_crc32c(crc32c(header, 8));
  if (stored != computed)
    return "corrupted record: length CRC mismatch (stored " + hex(stored) + ", computed " + hex(computed) +
           ")";
  const uint64_t room = left - kTFRecordHeaderBytes;
  if (length > kTFRecordMaxBytes || length + kTFRecordFooterBytes > room)
    return "truncated: the record's length " + std::to_string(length) + " runs past the end of the file (" +
           std::to_string(room) + " bytes remain)";
  return {};
}

std::string short_header(uint64_t left) {
  return "truncated: a record header needs 12 bytes, " + std::to_string(left) + " remain";
}

// Opens a regular file for reading with a large stdio buffer.
Result<std::FILE*> open_regular(const std::string& path, uint64_t& bytes) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) return Status(StatusCode::kNotFound, path + ": cannot open: " + std::strerror(errno));
  struct stat info;
  if (::fstat(::fileno(file), &info) != 0 || !S_ISREG(info.st_mode)) {
    std::fclose(file);
    return Status(StatusCode::kInvalidArgument, path + ": not a regular file");
  }
  std::setvbuf(file, nullptr, _IOFBF, kReadBufferBytes);
  bytes = uint64_t(info.st_size);
  return file;
}

}  // namespace

uint32_t crc32c(const void* data, std::size_t bytes) { return crc32c_extend(0, data, bytes); }

uint32_t crc32c_extend(uint32_t crc, const void* data, std::size_t bytes) {
  // The register after `crc` is the checksum with the final XOR undone;
  // Boost takes an initial remainder unreflected, as the polynomial is
  // written, and reflects it itself.
  uint32_t remainder = crc ^ 0xFFFFFFFFu, unreflected = 0;
  for (int bit = 0; bit < 32; ++bit) unreflected |= ((remainder >> bit) & 1u) << (31 - bit);
  Crc32c extended(unreflected);
  extended.process_bytes(data, bytes);
  return extended.checksum();
}

uint32_t mask_crc32c(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

Result<TFRecordWriter> TFRecordWriter::create(const std::string& path) {
  auto file = OutputFile::create(path);
  if (!file.ok()) return file.status();
  return TFRecordWriter(std::move(file).value());
}

TFRecordFrame tfrecord_frame(std::string_view record) {
  TFRecordFrame frame;
  const uint64_t length = record.size();
  for (int i = 0; i < 8; ++i) frame.header[i] = uint8_t(length >> (8 * i));
  put_u32(frame.header + 8, mask_crc32c(crc32c(frame.header, 8)));
  put_u32(frame.footer, mask_crc32c(crc32c(record.data(), record.size())));
  return frame;
}

Status TFRecordWriter::write(std::string_view record) {
  const TFRecordFrame frame = tfrecord_frame(record);
  SYSTOLE_RETURN_IF_ERROR(file_.write(frame.header, sizeof frame.header));
  SYSTOLE_RETURN_IF_ERROR(file_.write(record.data(), record.size()));
  SYSTOLE_RETURN_IF_ERROR(file_.write(frame.footer, sizeof frame.footer));
  ++records_;
  return ok_status();
}

Status TFRecordWriter::close() { return file_.commit(); }

Result<TFRecordReader> TFRecordReader::open(const std::string& path) {
  uint64_t bytes = 0;
  auto file = open_regular(path, bytes);
  if (!file.ok()) return file.status();
  return TFRecordReader(path, *file, bytes);
}

Status TFRecordReader::corrupt(const std::string& what) const {
  return Status(StatusCode::kDataLoss, path_ + ": record " + std::to_string(index_) + " at byte " +
                                           std::to_string(offset_) + ": " + what);
}

Result<bool> TFRecordReader::next(std::string& record) {
  if (offset_ >= file_bytes_) return false;
  const uint64_t left = file_bytes_ - offset_;
  // A frame that cannot be trusted leaves the reader at the end.
  auto frame_error = [&](const std::string& what) {
    Status status = corrupt(what);
    offset_ = file_bytes_;
    return status;
  };
  if (left < kTFRecordHeaderBytes) return frame_error(short_header(left));
  uint8_t header[kTFRecordHeaderBytes];
  if (std::fread(header, 1, sizeof header, file_.get()) != sizeof header)
    return frame_error("read failed: " + std::string(std::strerror(errno)));
  uint64_t length = 0;
  const std::string wrong = check_header(header, left, length);
  if (!wrong.empty()) return frame_error(wrong);
  const uint64_t frame = kTFRecordHeaderBytes + length + kTFRecordFooterBytes;
  record.resize(length);
  uint8_t footer[kTFRecordFooterBytes];
  if (std::fread(record.data(), 1, length, file_.get()) != length ||
      std::fread(footer, 1, sizeof footer, file_.get()) != sizeof footer)
    return frame_error("read failed (the file shrank while being read?)");
  const uint32_t stored_crc = get_u32(footer);
  const uint32_t crc = mask_crc32c(crc32c(record.data(), record.size()));
  Status status = crc == stored_crc ? ok_status()
                                    : corrupt("corrupted record: data CRC mismatch (stored " +
                                              hex(stored_crc) + ", computed " + hex(crc) + ")");
  offset_ += frame;
  ++index_;
  if (!status.ok()) return status;
  return true;
}

Result<uint64_t> count_tfrecords(const std::string& path) {
  uint64_t bytes = 0, offset = 0, count = 0;
  auto opened = open_regular(path, bytes);
  if (!opened.ok()) return opened.status();
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> closer(*opened, std::fclose);
  const int fd = ::fileno(*opened);
  // The frames only: each header read with pread, the data skipped.
  while (offset < bytes) {
    auto bad = [&](const std::string& what) {
      return Status(StatusCode::kDataLoss, path + ": record " + std::to_string(count) + " at byte " +
                                               std::to_string(offset) + ": " + what);
    };
    uint8_t header[kTFRecordHeaderBytes];
    if (bytes - offset < kTFRecordHeaderBytes ||
        ::pread(fd, header, sizeof header, off_t(offset)) != ssize_t(sizeof header))
      return bad(short_header(bytes - offset));
    uint64_t length = 0;
    const std::string wrong = check_header(header, bytes - offset, length);
    if (!wrong.empty()) return bad(wrong);
    offset += kTFRecordHeaderBytes + length + kTFRecordFooterBytes;
    ++count;
  }
  return count;
}

Result<std::vector<std::string>> match_files(const std::vector<std::string>& patterns) {
  std::vector<std::string> files;
  for (const std::string& pattern : patterns) {
    glob_t matches{};
    const int result = ::glob(pattern.c_str(), GLOB_ERR, nullptr, &matches);
    std::vector<std::string> found;
    if (result == 0)
      for (std::size_t i = 0; i < matches.gl_pathc; ++i) {
        struct stat info;
        if (::stat(matches.gl_pathv[i], &info) == 0 && S_ISREG(info.st_mode))
          found.push_back(matches.gl_pathv[i]);
      }
    ::globfree(&matches);
    if (found.empty()) return Status(StatusCode::kNotFound, pattern + ": matches no regular file");
    files.insert(files.end(), found.begin(), found.end());
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  return files;
}

}  // namespace systole
