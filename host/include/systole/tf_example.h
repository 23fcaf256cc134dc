// SPDX-License-Identifier: Apache-2.0
// tf.train.Example records under a fixed-length schema, with TensorFlow's
// FixedLenFeature semantics: every feature has a dtype and a shape; a record
// must carry exactly shape-many values of that dtype, or nothing when the
// feature has a default value. Bytes features feed a model through hash
// buckets (FarmHash Fingerprint64 mod buckets, as tf.strings.
// to_hash_bucket_fast computes).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "systole/status.h"

namespace systole {

enum class FeatureType { kFloat, kInt64, kBytes };

// "float32", "int64", "string" (TensorFlow's dtype names; "bytes" too).
Result<FeatureType> parse_feature_type(const std::string& name);
const char* feature_type_name(FeatureType type);

// How a text feature is cut into tokens.
//   words:      lower-cased (ASCII letters), split at ASCII whitespace and
//               punctuation: a token is a longest run of ASCII letters and
//               digits and of bytes >= 0x80 (UTF-8 letters stay whole), so
//               "GNU C++ compiler (v4.2)" is gnu, c, compiler, v4, 2.
//   characters: each UTF-8 character a token, case and spaces kept (a
//               malformed byte is a token of its own).
enum class TextSplit { kNone, kWords, kCharacters };
Result<TextSplit> parse_text_split(const std::string& name);  // "words", "characters"
const char* text_split_name(TextSplit split);
std::vector<std::string> split_text(std::string_view text, TextSplit split);

struct FeatureSpec {
  std::string name;
  FeatureType type = FeatureType::kFloat;
  std::vector<uint64_t> shape;  // [] is a scalar
  // Used when a record lacks the feature; without one, a missing feature is
  // an error. Holds shape-many values (or one, repeated).
  std::vector<double> default_numbers;
  std::vector<std::string> default_bytes;
  bool has_default = false;
  // Bytes features: each string becomes Fingerprint64(string) % hash_buckets.
  uint64_t hash_buckets = 0;
  // Text features (Keras' TextVectorization with output_sequence_length):
  // a bytes feature with a split holds one string per record, which
  // becomes `length` token ids, truncated or padded with 0, the padding id
  // (an embedding with mask_zero masks it). A token's id is
  // 1 + Fingerprint64(token) % (hash_buckets - 1), as Keras' Hashing layer
  // with a mask value; or, with a vocabulary, 2 + its line in the file and
  // 1 for a token not in it (TextVectorization's [UNK]).
  TextSplit split = TextSplit::kNone;
  uint32_t length = 0;
  std::vector<std::string> vocabulary;
  std::string vocabulary_file;  // where the vocabulary was read from (for configs and messages)

  uint64_t elements() const;  // values per example: length for text
  bool text() const { return split != TextSplit::kNone; }
};

// FarmHash Fingerprint64 (libfarmhash), and the bucket
// tf.strings.to_hash_bucket_fast gives a string.
uint64_t fingerprint64(std::string_view text);
inline uint64_t hash_bucket(std::string_view text, uint64_t buckets) { return fingerprint64(text) % buckets; }
// Fingerprint64 as 16 hex digits, as data sets record their input by.
std::string fingerprint64_hex(std::string_view text);

// The values of an example as the model sees them: each feature's values in
// schema order, converted to float (int64 values and bucket indices must be
// exact in float: |v| <= 2^24).
class ExampleSchema {
 public:
  // Checks the specs (names unique, shapes, defaults, hash buckets); errors
  // name the feature.
  static Result<ExampleSchema> create(std::vector<FeatureSpec> features);

  const std::vector<FeatureSpec>& features() const { return features_; }
  // Index of the feature called `name`, or an error naming it.
  Result<std::size_t> find(const std::string& name) const;
  // Where feature i's values start in a row, and the row's length.
  std::size_t offset(std::size_t i) const { return offsets_[i]; }
  std::size_t row_size() const { return row_size_; }

  // Parses a serialized tf.train.Example into `row` (row_size() floats).
  // Errors name the feature and what is wrong (not a valid Example, wrong
  // dtype, wrong number of values, a value not exact in float); the caller
  // adds the file and record.
  Status parse(std::string_view record, float* row) const;

 private:
  // Writes the ids of `text` (feature i's) into out[0, length).
  void text_ids(std::size_t i, std::string_view text, float* out) const;

  std::vector<FeatureSpec> features_;
  std::vector<std::unordered_map<std::string, uint32_t>> vocabularies_;  // per feature: token -> id
  std::vector<std::size_t> offsets_;
  std::size_t row_size_ = 0;
};

// Builds a serialized tf.train.Example from named features (for writers).
class ExampleBuilder {
 public:
  ExampleBuilder();
  ~ExampleBuilder();
  ExampleBuilder(const ExampleBuilder&) = delete;
  ExampleBuilder& operator=(const ExampleBuilder&) = delete;

  void clear();
  void add_floats(const std::string& name, const float* values, std::size_t count);
  void add_int64s(const std::string& name, const int64_t* values, std::size_t count);
  void add_bytes(const std::string& name, const std::vector<std::string>& values);
  // The Example's bytes (deterministic: features in name order).
  std::string serialize() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A readable rendering of a serialized Example ("label: int64 [3]"), one
// feature per line, long lists elided; or an error if it is not one.
Result<std::string> describe_example(std::string_view record, std::size_t max_values = 8);

}  // namespace systole
