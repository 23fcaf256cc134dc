// SPDX-License-Identifier: Apache-2.0
// The .npy reader. xtensor's xt::load_npy trusts the header it reads: the
// header length is sign-extended, a malformed shape leaves a dimension
// uninitialised, and the whole array is allocated at the size the header
// claims before a byte of data is read. So the header is parsed here,
// strictly, and every size is checked against the file before allocation
// (xtensor still writes .npy files: xt::dump_npy).
#include "npy_matrix.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

namespace systole::tools {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicBytes = 6;
// numpy's own reader refuses longer headers (np.load's max_header_size).
constexpr uint64_t kMaxHeaderBytes = 10000;

uint64_t little_endian(const unsigned char* bytes, int count) {
  uint64_t value = 0;
  for (int i = count - 1; i >= 0; --i) value = value << 8 | bytes[i];
  return value;
}

// The header's Python dict literal, e.g.
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
// Values are strings, True/False or tuples of non-negative integers; the
// dict is all a header may hold but spaces and the closing newline.
class HeaderParser {
 public:
  struct Value {
    enum Kind { kString, kBool, kTuple } kind = kString;
    std::string text;
    bool flag = false;
    std::vector<uint64_t> tuple;
  };

  HeaderParser(const std::string& text, uint64_t file_offset) : text_(text), file_offset_(file_offset) {}

  // Fills `dict`; on failure returns what is wrong and at which byte of the
  // file.
  std::string parse(std::map<std::string, Value>& dict) {
    skip_spaces();
    if (!take('{')) return error("a header starts with '{'");
    for (;;) {
      skip_spaces();
      if (take('}')) break;
      std::string key;
      if (!quoted(key)) return error("expected a quoted key or '}'");
      skip_spaces();
      if (!take(':')) return error("expected ':' after '" + key + "'");
      skip_spaces();
      Value value;
      if (std::string problem = parse_value(value); !problem.empty()) return problem;
      if (!dict.emplace(key, std::move(value)).second) return error("key '" + key + "' appears twice");
      skip_spaces();
      if (take(',')) continue;
      skip_spaces();
      if (take('}')) break;
      return error("expected ',' or '}'");
    }
    skip_spaces();
    if (!take('\n') || pos_ != text_.size())
      return error("a header ends with its dict, spaces and a newline");
    return "";
  }

 private:
  std::string parse_value(Value& value) {
    if (peek() == '\'' || peek() == '"') {
      value.kind = Value::kString;
      return quoted(value.text) ? "" : error("unterminated string");
    }
    for (const bool flag : {true, false}) {
      if (word(flag ? "True" : "False")) {
        value.kind = Value::kBool;
        value.flag = flag;
        return "";
      }
    }
    if (take('(')) {
      value.kind = Value::kTuple;
      for (;;) {
        skip_spaces();
        if (take(')')) return "";
        uint64_t number = 0;
        if (!integer(number)) return error("expected a non-negative integer or ')' in a tuple");
        value.tuple.push_back(number);
        skip_spaces();
        if (take(',')) continue;
        skip_spaces();
        if (take(')')) return "";
        return error("expected ',' or ')' in a tuple");
      }
    }
    return error("expected a string, True, False or a tuple");
  }

  bool quoted(std::string& out) {
    const char quote = peek();
    if (quote != '\'' && quote != '"') return false;
    const std::size_t end = text_.find(quote, pos_ + 1);
    if (end == std::string::npos) return false;
    out = text_.substr(pos_ + 1, end - pos_ - 1);
    pos_ = end + 1;
    return true;
  }
  bool integer(uint64_t& out) {
    const std::size_t start = pos_;
    out = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      const uint64_t digit = uint64_t(text_[pos_] - '0');
      if (out > (UINT64_MAX - digit) / 10) return false;  // does not fit 64 bits
      out = out * 10 + digit;
      ++pos_;
    }
    return pos_ > start;
  }
  bool word(const char* w) {
    const std::size_t n = std::strlen(w);
    if (text_.compare(pos_, n, w) != 0) return false;
    pos_ += n;
    return true;
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool take(char c) {
    if (pos_ >= text_.size() || text_[pos_] != c) return false;
    ++pos_;
    return true;
  }
  void skip_spaces() {
    while (pos_ < text_.size() && text_[pos_] == ' ') ++pos_;
  }
  std::string error(const std::string& what) const {
    return what + " (header byte " + std::to_string(file_offset_ + pos_) + ")";
  }

  const std::string& text_;
  const uint64_t file_offset_;
  std::size_t pos_ = 0;
};

}  // namespace

Result<NpyArray> read_npy(const std::string& path) {
  std::error_code error;
  const std::filesystem::file_status type = std::filesystem::status(path, error);
  if (error) return Status(StatusCode::kNotFound, "cannot open " + path + " (" + error.message() + ")");
  if (!std::filesystem::is_regular_file(type))
    return Status(StatusCode::kInvalidArgument, path + ": not a regular file");
  const uint64_t file_bytes = std::filesystem::file_size(path, error);
  std::ifstream in(path, std::ios::binary);
  if (error || !in) return Status(StatusCode::kNotFound, "cannot open " + path);
  auto invalid = [&](const std::string& what) {
    return Status(StatusCode::kInvalidArgument, path + " is not a float32 .npy matrix: " + what);
  };
  auto truncated = [&](const std::string& what) {
    return Status(StatusCode::kDataLoss, path + " is truncated: " + what);
  };

  // Magic, version, header length (2 bytes in version 1, 4 in 2 and 3).
  unsigned char preamble[12] = {};
  if (file_bytes < kMagicBytes + 4 || !in.read(reinterpret_cast<char*>(preamble), kMagicBytes + 4) ||
      std::memcmp(preamble, kMagic, kMagicBytes) != 0)
    return invalid("no .npy magic (\\x93NUMPY) at byte 0");
  const unsigned major = preamble[6], minor = preamble[7];
  if (major < 1 || major > 3 || minor != 0)
    return invalid("format version " + std::to_string(major) + "." + std::to_string(minor) +
                   " at byte 6 (1.0, 2.0 and 3.0 are read)");
  const int length_bytes = major == 1 ? 2 : 4;
  if (length_bytes == 4 && !in.read(reinterpret_cast<char*>(preamble) + 10, 2))
    return truncated("the header length at byte 8 is cut off");
  const uint64_t header_bytes = little_endian(preamble + 8, length_bytes);
  const uint64_t data_offset = 8 + length_bytes + header_bytes;
  if (header_bytes > kMaxHeaderBytes)
    return invalid("header length " + std::to_string(header_bytes) + " at byte 8 exceeds " +
                   std::to_string(kMaxHeaderBytes) + " bytes");
  if (data_offset > file_bytes)
    return truncated("its header ends at byte " + std::to_string(data_offset) + ", the file has " +
                     std::to_string(file_bytes) + " bytes");
  std::string header(header_bytes, '\0');
  if (!in.read(header.data(), std::streamsize(header_bytes))) return truncated("reading the header failed");

  std::map<std::string, HeaderParser::Value> dict;
  if (std::string problem = HeaderParser(header, 8 + length_bytes).parse(dict); !problem.empty())
    return invalid(problem);
  for (const auto& [key, value] : dict)
    if (key != "descr" && key != "fortran_order" && key != "shape")
      return invalid("unknown key '" + key + "'");
  const auto descr = dict.find("descr");
  const auto fortran = dict.find("fortran_order");
  const auto shape = dict.find("shape");
  if (descr == dict.end() || fortran == dict.end() || shape == dict.end())
    return invalid("the header needs 'descr', 'fortran_order' and 'shape'");
  if (descr->second.kind != HeaderParser::Value::kString || descr->second.text != "<f4")
    return invalid("dtype " + descr->second.text + " (float32, '<f4', is read)");
  if (fortran->second.kind != HeaderParser::Value::kBool) return invalid("'fortran_order' is True or False");
  const std::vector<uint64_t>& dims = shape->second.tuple;
  if (shape->second.kind != HeaderParser::Value::kTuple || dims.empty())
    return invalid("'shape' must be a tuple of at least one dimension");
  std::string shape_text;
  for (uint64_t dim : dims) shape_text += (shape_text.empty() ? "(" : ", ") + std::to_string(dim);
  shape_text += ")";

  // The element count, bounded by the file's data bytes as it grows, so it
  // cannot overflow.
  const uint64_t data_bytes = file_bytes - data_offset;
  uint64_t count = 1;
  for (uint64_t dim : dims) {
    if (dim == 0) return invalid("shape " + shape_text + " has no elements");
    if (dim > data_bytes / 4 / count)
      return truncated("shape " + shape_text + " needs more floats than the " + std::to_string(data_bytes) +
                       " bytes after byte " + std::to_string(data_offset));
    count *= dim;
  }
  if (count * 4 != data_bytes)
    return invalid(std::to_string(data_bytes - count * 4) + " bytes after the data of shape " + shape_text +
                   " at byte " + std::to_string(data_offset + count * 4));

  // The data straight into the values (as bytes, decoded in place from
  // little-endian), so the array is held once.
  NpyArray array;
  array.shape = dims;
  array.values.resize(count);
  if (!in.read(reinterpret_cast<char*>(array.values.data()), std::streamsize(data_bytes)))
    return truncated("reading the data failed");
  for (float& value : array.values) {
    const uint32_t bits = uint32_t(little_endian(reinterpret_cast<const unsigned char*>(&value), 4));
    std::memcpy(&value, &bits, 4);
  }
  if (!fortran->second.flag || dims.size() == 1) return array;
  // Fortran order: the first index varies fastest in the file. Walk the
  // file's elements with their index, counting in that order.
  std::vector<float> row_major(count);
  std::vector<uint64_t> stride(dims.size(), 1), index(dims.size(), 0);
  for (std::size_t d = dims.size() - 1; d > 0; --d) stride[d - 1] = stride[d] * dims[d];
  uint64_t position = 0;  // of file element i in the array, row-major
  for (uint64_t i = 0; i < count; ++i) {
    row_major[position] = array.values[i];
    for (std::size_t d = 0; d < dims.size(); ++d) {
      position += stride[d];
      if (++index[d] < dims[d]) break;
      position -= stride[d] * dims[d];
      index[d] = 0;
    }
  }
  array.values = std::move(row_major);
  return array;
}

Result<NpyMatrix> read_npy_matrix(const std::string& path) {
  Result<NpyArray> array = read_npy(path);
  if (!array.ok()) return array.status();
  if (array->shape.size() != 2 || array->shape[0] > UINT32_MAX || array->shape[1] > UINT32_MAX)
    return Status(StatusCode::kInvalidArgument, path + " must hold a 2-D array (rows, columns), has " +
                                                    std::to_string(array->shape.size()) + " dimension(s)");
  NpyMatrix matrix;
  matrix.rows = uint32_t(array->shape[0]);
  matrix.cols = uint32_t(array->shape[1]);
  matrix.values = std::move(array->values);
  return matrix;
}

}  // namespace systole::tools
