// SPDX-License-Identifier: Apache-2.0
// tf.train.Example through libprotobuf (the messages in host/proto), hash
// buckets through libfarmhash.
#include "systole/tf_example.h"

#include <farmhash.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <sstream>

#include "proto/example.pb.h"

namespace systole {
namespace {

// Integers a float holds exactly.
constexpr double kExactInFloat = 16777216.0;  // 2^24

Status bad_feature(const FeatureSpec& spec, const std::string& what) {
  return Status(StatusCode::kInvalidArgument, "feature '" + spec.name + "': " + what);
}

const char* kind_name(tf::Feature::KindCase kind) {
  switch (kind) {
    case tf::Feature::kFloatList:
      return "float_list";
    case tf::Feature::kInt64List:
      return "int64_list";
    case tf::Feature::kBytesList:
      return "bytes_list";
    default:
      return "no value";
  }
}

tf::Feature::KindCase kind_of(FeatureType type) {
  switch (type) {
    case FeatureType::kFloat:
      return tf::Feature::kFloatList;
    case FeatureType::kInt64:
      return tf::Feature::kInt64List;
    case FeatureType::kBytes:
      return tf::Feature::kBytesList;
  }
  return tf::Feature::KIND_NOT_SET;
}

// An int64 value or a bucket index as the float the model sees.
Status exact_float(const FeatureSpec& spec, int64_t value, float& out) {
  if (std::fabs(double(value)) > kExactInFloat)
    return bad_feature(spec, "value " + std::to_string(value) + " is not exact in float32 (|v| <= 2^24)");
  out = float(value);
  return ok_status();
}

}  // namespace

Result<FeatureType> parse_feature_type(const std::string& name) {
  if (name == "float32" || name == "float") return FeatureType::kFloat;
  if (name == "int64") return FeatureType::kInt64;
  if (name == "string" || name == "bytes") return FeatureType::kBytes;
  return Status(StatusCode::kInvalidArgument,
                "unknown dtype '" + name + "' (expected float32, int64 or string)");
}

const char* feature_type_name(FeatureType type) {
  switch (type) {
    case FeatureType::kFloat:
      return "float32";
    case FeatureType::kInt64:
      return "int64";
    case FeatureType::kBytes:
      return "string";
  }
  return "?";
}

Result<TextSplit> parse_text_split(const std::string& name) {
  if (name == "words") return TextSplit::kWords;
  if (name == "characters") return TextSplit::kCharacters;
  return Status(StatusCode::kInvalidArgument, "unknown split '" + name + "' (expected words or characters)");
}

const char* text_split_name(TextSplit split) {
  switch (split) {
    case TextSplit::kWords:
      return "words";
    case TextSplit::kCharacters:
      return "characters";
    case TextSplit::kNone:
      break;
  }
  return "none";
}

std::vector<std::string> split_text(std::string_view text, TextSplit split) {
  std::vector<std::string> tokens;
  if (split == TextSplit::kCharacters) {
    for (std::size_t i = 0; i < text.size();) {
      const unsigned char lead = static_cast<unsigned char>(text[i]);
      std::size_t bytes = lead < 0x80         ? 1
                          : lead >> 5 == 0x6  ? 2
                          : lead >> 4 == 0xe  ? 3
                          : lead >> 3 == 0x1e ? 4
                                              : 1;
      for (std::size_t k = 1; k < bytes; ++k)  // a short or broken sequence: its lead byte alone
        if (i + k >= text.size() || (static_cast<unsigned char>(text[i + k]) & 0xc0) != 0x80) bytes = 1;
      tokens.emplace_back(text.substr(i, bytes));
      i += bytes;
    }
    return tokens;
  }
  std::string token;
  for (char c : text) {
    const unsigned char byte = static_cast<unsigned char>(c);
    if (byte >= 0x80 || std::isalnum(byte)) {
      token += byte < 0x80 ? char(std::tolower(byte)) : c;
    } else if (!token.empty()) {
      tokens.push_back(std::move(token));
      token.clear();
    }
  }
  if (!token.empty()) tokens.push_back(std::move(token));
  return tokens;
}

uint64_t FeatureSpec::elements() const {
  if (text()) return length;
  uint64_t count = 1;
  for (uint64_t d : shape) count *= d;
  return count;
}

uint64_t fingerprint64(std::string_view text) { return util::Fingerprint64(text.data(), text.size()); }

std::string fingerprint64_hex(std::string_view text) {
  char digits[17];
  std::snprintf(digits, sizeof digits, "%016llx", (unsigned long long)fingerprint64(text));
  return digits;
}

Result<ExampleSchema> ExampleSchema::create(std::vector<FeatureSpec> features) {
  ExampleSchema schema;
  std::set<std::string> names;
  for (const FeatureSpec& spec : features) {
    if (spec.name.empty()) return Status(StatusCode::kInvalidArgument, "a feature has no name");
    if (!names.insert(spec.name).second) return bad_feature(spec, "named twice");
    for (uint64_t d : spec.shape)
      if (d == 0 || d > (1u << 24)) return bad_feature(spec, "shape dimensions must be in [1, 2^24]");
    if (spec.elements() > (1u << 24)) return bad_feature(spec, "more than 2^24 values per example");
    std::unordered_map<std::string, uint32_t> vocabulary;
    if (spec.text() || spec.length || !spec.vocabulary.empty()) {
      if (spec.type != FeatureType::kBytes)
        return bad_feature(spec, "split, length and vocabulary apply to strings");
      if (!spec.text()) return bad_feature(spec, "length and vocabulary need a split (words or characters)");
      if (spec.length == 0)
        return bad_feature(spec, "length: required for a text feature (the ids per example)");
      if (spec.length > (1u << 24)) return bad_feature(spec, "length: more than 2^24 ids per example");
      if (!spec.shape.empty()) return bad_feature(spec, "a text feature has length, not shape");
      if (spec.vocabulary.empty() == (spec.hash_buckets == 0))
        return bad_feature(spec, "a text feature takes hash_buckets or a vocabulary (one of the two)");
      if (spec.hash_buckets == 1)
        return bad_feature(spec, "hash_buckets: a text feature needs 2 or more (0 is padding)");
      if (double(spec.vocabulary.size()) + 2 > kExactInFloat)
        return bad_feature(spec, "vocabulary: more than 2^24 - 2 tokens");
      for (std::size_t t = 0; t < spec.vocabulary.size(); ++t)
        if (!vocabulary.emplace(spec.vocabulary[t], uint32_t(t + 2)).second)
          return bad_feature(spec, "vocabulary: '" + spec.vocabulary[t] + "' is there twice");
      if (spec.has_default && spec.default_bytes.size() != 1)
        return bad_feature(spec, "default: a text feature's default is one string");
    }
    if (spec.type == FeatureType::kBytes && spec.vocabulary.empty()) {
      if (spec.hash_buckets == 0)
        return bad_feature(spec, "a string feature feeds a model through hash_buckets; set it");
      if (double(spec.hash_buckets) > kExactInFloat)
        return bad_feature(spec, "hash_buckets " + std::to_string(spec.hash_buckets) + " is more than 2^24");
    } else if (spec.hash_buckets != 0) {
      return bad_feature(spec, "hash_buckets applies to string features only");
    }
    if (spec.has_default && !spec.text()) {
      const std::size_t count =
          spec.type == FeatureType::kBytes ? spec.default_bytes.size() : spec.default_numbers.size();
      if (count != 1 && count != spec.elements())
        return bad_feature(spec, "default has " + std::to_string(count) + " values; expected 1 or " +
                                     std::to_string(spec.elements()));
    }
    schema.offsets_.push_back(schema.row_size_);
    schema.row_size_ += spec.elements();
    schema.vocabularies_.push_back(std::move(vocabulary));
  }
  schema.features_ = std::move(features);
  return schema;
}

Result<std::size_t> ExampleSchema::find(const std::string& name) const {
  for (std::size_t i = 0; i < features_.size(); ++i)
    if (features_[i].name == name) return i;
  return Status(StatusCode::kInvalidArgument, "no feature '" + name + "' in the schema");
}

Status ExampleSchema::parse(std::string_view record, float* row) const {
  thread_local tf::Example example;
  if (!example.ParseFromArray(record.data(), int(record.size())))
    return Status(StatusCode::kDataLoss, "not a valid tf.train.Example");
  const auto& map = example.features().feature();
  for (std::size_t i = 0; i < features_.size(); ++i) {
    const FeatureSpec& spec = features_[i];
    float* out = row + offsets_[i];
    const uint64_t n = spec.elements();
    const auto found = map.find(spec.name);
    const bool present = found != map.end() && found->second.kind_case() != tf::Feature::KIND_NOT_SET;
    if (!present) {
      if (!spec.has_default) return bad_feature(spec, "missing, and it has no default value");
      if (spec.text()) {
        text_ids(i, spec.default_bytes[0], out);
        continue;
      }
      const std::size_t defaults =
          spec.type == FeatureType::kBytes ? spec.default_bytes.size() : spec.default_numbers.size();
      for (uint64_t j = 0; j < n; ++j) {
        const std::size_t k = defaults == 1 ? 0 : j;  // one value fills the shape
        if (spec.type == FeatureType::kBytes) {
          SYSTOLE_RETURN_IF_ERROR(
              exact_float(spec, int64_t(hash_bucket(spec.default_bytes[k], spec.hash_buckets)), out[j]));
        } else {
          out[j] = float(spec.default_numbers[k]);
        }
      }
      continue;
    }
    const tf::Feature& feature = found->second;
    if (feature.kind_case() != kind_of(spec.type))
      return bad_feature(spec, std::string("expected ") + kind_name(kind_of(spec.type)) + " (" +
                                   feature_type_name(spec.type) + "), got " + kind_name(feature.kind_case()));
    uint64_t got = 0;
    switch (spec.type) {
      case FeatureType::kFloat: {
        const auto& values = feature.float_list().value();
        got = uint64_t(values.size());
        if (got == n) std::copy(values.begin(), values.end(), out);
        break;
      }
      case FeatureType::kInt64: {
        const auto& values = feature.int64_list().value();
        got = uint64_t(values.size());
        if (got == n)
          for (uint64_t j = 0; j < n; ++j) SYSTOLE_RETURN_IF_ERROR(exact_float(spec, values[int(j)], out[j]));
        break;
      }
      case FeatureType::kBytes: {
        const auto& values = feature.bytes_list().value();
        if (spec.text()) {
          if (values.size() != 1)
            return bad_feature(spec, "a text feature holds one string, got " + std::to_string(values.size()));
          text_ids(i, values[0], out);
          got = n;
          break;
        }
        got = uint64_t(values.size());
        if (got == n)
          for (uint64_t j = 0; j < n; ++j)
            out[j] = float(hash_bucket(values[int(j)], spec.hash_buckets));  // < 2^24: exact
        break;
      }
    }
    if (got != n)
      return bad_feature(spec, "expected " + std::to_string(n) + " " + feature_type_name(spec.type) +
                                   " value(s), got " + std::to_string(got));
  }
  return ok_status();
}

void ExampleSchema::text_ids(std::size_t i, std::string_view text, float* out) const {
  const FeatureSpec& spec = features_[i];
  const std::vector<std::string> tokens = split_text(text, spec.split);
  const std::size_t kept = std::min<std::size_t>(tokens.size(), spec.length);
  for (std::size_t t = 0; t < kept; ++t) {
    if (spec.vocabulary.empty()) {
      out[t] = float(1 + hash_bucket(tokens[t], spec.hash_buckets - 1));  // < 2^24: exact
    } else {
      const auto found = vocabularies_[i].find(tokens[t]);
      out[t] = found == vocabularies_[i].end() ? 1.0f : float(found->second);
    }
  }
  std::fill(out + kept, out + spec.length, 0.0f);
}

struct ExampleBuilder::Impl {
  tf::Example example;
};

ExampleBuilder::ExampleBuilder() : impl_(std::make_unique<Impl>()) {}
ExampleBuilder::~ExampleBuilder() = default;

void ExampleBuilder::clear() { impl_->example.Clear(); }

void ExampleBuilder::add_floats(const std::string& name, const float* values, std::size_t count) {
  auto* list = (*impl_->example.mutable_features()->mutable_feature())[name].mutable_float_list();
  list->mutable_value()->Add(values, values + count);
}

void ExampleBuilder::add_int64s(const std::string& name, const int64_t* values, std::size_t count) {
  auto* list = (*impl_->example.mutable_features()->mutable_feature())[name].mutable_int64_list();
  list->mutable_value()->Add(values, values + count);
}

void ExampleBuilder::add_bytes(const std::string& name, const std::vector<std::string>& values) {
  auto* list = (*impl_->example.mutable_features()->mutable_feature())[name].mutable_bytes_list();
  for (const std::string& value : values) list->add_value(value);
}

std::string ExampleBuilder::serialize() const {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);  // map entries in key order
    impl_->example.SerializeToCodedStream(&coded);
  }
  return bytes;
}

Result<std::string> describe_example(std::string_view record, std::size_t max_values) {
  tf::Example example;
  if (!example.ParseFromArray(record.data(), int(record.size())))
    return Status(StatusCode::kDataLoss, "not a valid tf.train.Example");
  std::set<std::string> names;
  for (const auto& entry : example.features().feature()) names.insert(entry.first);
  std::ostringstream text;
  for (const std::string& name : names) {
    const tf::Feature& feature = example.features().feature().at(name);
    text << "  " << name << ": ";
    auto list = [&](const auto& values, auto print) {
      text << kind_name(feature.kind_case()) << "[" << values.size() << "] {";
      for (int i = 0; i < values.size() && std::size_t(i) < max_values; ++i) {
        text << (i ? ", " : "");
        print(values[i]);
      }
      if (std::size_t(values.size()) > max_values) text << ", ...";
      text << "}\n";
    };
    switch (feature.kind_case()) {
      case tf::Feature::kFloatList:
        list(feature.float_list().value(), [&](float v) { text << v; });
        break;
      case tf::Feature::kInt64List:
        list(feature.int64_list().value(), [&](int64_t v) { text << v; });
        break;
      case tf::Feature::kBytesList:
        list(feature.bytes_list().value(), [&](const std::string& v) {
          text << '"';
          for (unsigned char c : v.substr(0, 40)) {
            if (c >= 32 && c < 127 && c != '"' && c != '\\')
              text << c;
            else {
              char escaped[8];
              std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
              text << escaped;
            }
          }
          text << (v.size() > 40 ? "...\"" : "\"");
        });
        break;
      default:
        text << "(no value)\n";
        break;
    }
  }
  return text.str();
}

}  // namespace systole
