// SPDX-License-Identifier: Apache-2.0
// Compressed TFRecord files, differentially: the input's first byte picks
// GZIP or ZLIB, the rest is a TFRecord stream, which the target compresses
// with zlib and writes beside the plain one. Reading the compressed file
// must give exactly the plain file's records and, where the stream breaks,
// the same kind of error at the same record and offset (offsets count the
// uncompressed stream); count_tfrecords agrees on both. Then the input itself, read as
// compressed data under every setting, ends in records or an error naming
// the file, never a crash or a hang.
#include <zlib.h>

#include <string>
#include <vector>

#include "fuzz_input.h"
#include "systole/tfrecord.h"

namespace {

using systole::Compression;

// Deflates `plain` as gzip (RFC 1952) or zlib (RFC 1950).
std::string compress(std::string_view plain, bool gzip) {
  z_stream stream{};
  if (deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, gzip ? 31 : 15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    systole::fuzz::fail("deflateInit2");
  std::string out(deflateBound(&stream, plain.size()) + 32, '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(plain.data()));
  stream.avail_in = uInt(plain.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = uInt(out.size());
  if (deflate(&stream, Z_FINISH) != Z_STREAM_END) systole::fuzz::fail("deflate did not finish");
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

// Where and what an error is: "record R at byte B: kind" of ": record R at
// byte B: kind: details" (the details may say "file" or "stream").
std::string error_site(const std::string& message) {
  std::size_t end = 0;
  for (int part = 0; part < 2 && end != std::string::npos; ++part) end = message.find(": ", end + 1);
  return message.substr(0, end);
}

// Every record of a file, then "error: <where and what>" if the stream
// breaks (after a damaged record's data, reading goes on).
std::vector<std::string> read_all(const std::string& path, Compression compression) {
  std::vector<std::string> out;
  auto reader = systole::TFRecordReader::open(path, compression);
  if (!reader.ok()) return {"open: " + reader.status().message().substr(path.size())};
  std::string record;
  for (;;) {
    const uint64_t index = reader->records_read();
    auto more = reader->next(record);
    if (!more.ok()) {
      const std::string& message = more.status().message();
      if (message.rfind(path, 0) != 0)
        systole::fuzz::fail("an error that does not name the file: " + message);
      out.push_back("error: " + error_site(message.substr(path.size())));
      if (reader->records_read() == index) break;  // a broken frame ends the file
      continue;
    }
    if (!*more) break;
    out.push_back(record);
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace systole;
  if (size == 0) return 0;
  const bool gzip = (data[0] & 1) != 0;
  const std::string_view plain(reinterpret_cast<const char*>(data) + 1, size - 1);
  // The same name length for both files, so that messages compare whole.
  const std::string plain_path = fuzz::write_file("plain.tfrecord", plain);
  const std::string packed_path = fuzz::write_file("packd.tfrecord", compress(plain, gzip));
  const Compression kind = gzip ? Compression::kGzip : Compression::kZlib;
  const std::vector<std::string> expected = read_all(plain_path, Compression::kNone);
  const std::vector<std::string> packed = read_all(packed_path, kind);
  if (packed != expected) {
    std::size_t i = 0;
    while (i < packed.size() && i < expected.size() && packed[i] == expected[i]) ++i;
    fuzz::fail("the compressed file reads otherwise than the plain one at entry " + std::to_string(i) +
               ": '" + (i < packed.size() ? packed[i] : "(end)") + "' against '" +
               (i < expected.size() ? expected[i] : "(end)") + "'");
  }
  if (read_all(packed_path, Compression::kAuto) != expected)
    fuzz::fail("auto did not recognise the compression");
  auto plain_count = count_tfrecords(plain_path);
  auto packed_count = count_tfrecords(packed_path, kind);
  if (plain_count.ok() != packed_count.ok() || (plain_count.ok() && *plain_count != *packed_count))
    fuzz::fail("count_tfrecords disagrees between the plain and the compressed file");

  // The raw input as compressed data: whatever it holds, an answer.
  const std::string raw_path =
      fuzz::write_file("input.tfrecord", {reinterpret_cast<const char*>(data), size});
  for (Compression compression : {Compression::kGzip, Compression::kZlib, Compression::kAuto})
    (void)read_all(raw_path, compression);
  return 0;
}
