// SPDX-License-Identifier: Apache-2.0
// tf.train.Example under a schema (label unit): parsing against bytes built
// by hand from the wire format, FixedLenFeature's errors, FarmHash buckets
// against known values, and text features (splitting, hashed and
// vocabulary ids, padding, bad specs).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/feature_spec.h"
#include "systole/tf_example.h"

namespace systole {
namespace {

using testing::spec;

// An Example built byte by byte from the protobuf wire format: features
// {"x": float_list [1.5, -2], "id": bytes_list ["ab"]}.
std::string hand_built_example() {
  auto field = [](int number, const std::string& payload) {  // length-delimited
    return std::string(1, char(number << 3 | 2)) + char(payload.size()) + payload;
  };
  std::string floats;  // FloatList.value, packed
  for (float v : {1.5f, -2.0f}) floats.append(reinterpret_cast<const char*>(&v), 4);
  const std::string x_feature = field(2, field(1, floats));  // Feature.float_list = 2
  const std::string id_feature = field(1, field(1, "ab"));   // Feature.bytes_list = 1
  const std::string x_entry = field(1, "x") + field(2, x_feature);
  const std::string id_entry = field(1, "id") + field(2, id_feature);
  return field(1, field(1, id_entry) + field(1, x_entry));  // Example.features, Features.feature map
}

TEST(Examples, ParsesHandBuiltBytesAndBuildsTheSame) {
  FeatureSpec x = spec("x", FeatureType::kFloat, {2});
  FeatureSpec id = spec("id", FeatureType::kBytes, {});
  id.hash_buckets = 1000;
  auto schema = ExampleSchema::create({x, id});
  ASSERT_TRUE(schema.ok()) << schema.status().message();
  std::vector<float> row(schema->row_size());
  const std::string bytes = hand_built_example();
  ASSERT_TRUE(schema->parse(bytes, row.data()).ok());
  EXPECT_EQ(row, (std::vector<float>{1.5f, -2.0f, float(fingerprint64("ab") % 1000)}));

  ExampleBuilder builder;
  const float values[] = {1.5f, -2.0f};
  builder.add_floats("x", values, 2);
  builder.add_bytes("id", {"ab"});
  EXPECT_EQ(builder.serialize(), bytes);  // deterministic: map keys in order
}

TEST(Examples, FixedLenFeatureErrorsNameTheFeature) {
  FeatureSpec x = spec("x", FeatureType::kFloat, {3});
  FeatureSpec n = spec("n", FeatureType::kInt64, {});
  n.has_default = true;
  n.default_numbers = {7};
  auto schema = ExampleSchema::create({x, n});
  ASSERT_TRUE(schema.ok());
  std::vector<float> row(schema->row_size());
  auto parse = [&](const ExampleBuilder& b) {
    const Status status = schema->parse(b.serialize(), row.data());
    return status.ok() ? std::string() : status.message();
  };
  ExampleBuilder b;
  const float three[] = {1, 2, 3};
  b.add_floats("x", three, 3);
  EXPECT_EQ(parse(b), "");
  EXPECT_EQ(row[3], 7.0f);  // n's default
  b.clear();
  b.add_floats("x", three, 2);
  EXPECT_EQ(parse(b), "feature 'x': expected 3 float32 value(s), got 2");
  b.clear();
  const int64_t ints[] = {1, 2, 3};
  b.add_int64s("x", ints, 3);
  EXPECT_EQ(parse(b), "feature 'x': expected float_list (float32), got int64_list");
  b.clear();
  EXPECT_EQ(parse(b), "feature 'x': missing, and it has no default value");
  b.add_floats("x", three, 3);
  const int64_t huge = int64_t(1) << 40;
  b.add_int64s("n", &huge, 1);
  EXPECT_EQ(parse(b), "feature 'n': value 1099511627776 is not exact in float32 (|v| <= 2^24)");
  EXPECT_EQ(schema->parse("\xff\xff", row.data()).message(), "not a valid tf.train.Example");

  FeatureSpec s = spec("s", FeatureType::kBytes, {});
  EXPECT_EQ(ExampleSchema::create({s}).status().message(),
            "feature 's': a string feature feeds a model through hash_buckets; set it");
  EXPECT_EQ(ExampleSchema::create({x, x}).status().message(), "feature 'x': named twice");
}

TEST(HashBuckets, FarmHashFingerprint64) {
  // Known Fingerprint64 values (FarmHash's farmhashna, as TensorFlow's
  // to_hash_bucket_fast uses).
  EXPECT_EQ(fingerprint64(""), 11160318154034397263ull);
  EXPECT_EQ(fingerprint64("Hello"), 15404698994557526151ull);
  EXPECT_EQ(fingerprint64("World"), 18308117990299812472ull);
  // tf.strings.to_hash_bucket_fast(["Hello", "TensorFlow", "2.x"], 3)
  // is [0, 2, 2] in TensorFlow's documentation.
  EXPECT_EQ(hash_bucket("Hello", 3), 0u);
  EXPECT_EQ(hash_bucket("TensorFlow", 3), 2u);
  EXPECT_EQ(hash_bucket("2.x", 3), 2u);
}

TEST(TextFeatures, SplitsWordsAndCharacters) {
  using Tokens = std::vector<std::string>;
  EXPECT_EQ(split_text("GNU C++ compiler (v4.2)", TextSplit::kWords),
            (Tokens{"gnu", "c", "compiler", "v4", "2"}));
  EXPECT_EQ(split_text("  --Caf\xc3\xa9-au-LAIT!! ", TextSplit::kWords),
            (Tokens{"caf\xc3\xa9", "au", "lait"}));
  EXPECT_EQ(split_text("", TextSplit::kWords), Tokens{});
  EXPECT_EQ(split_text(" .,;", TextSplit::kWords), Tokens{});
  EXPECT_EQ(split_text("a \xc3\xa9\xe2\x82\xac\xf0\x9f\x99\x82!", TextSplit::kCharacters),
            (Tokens{"a", " ", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x99\x82", "!"}));
  // A broken sequence: its lead byte alone, then the rest as they come.
  EXPECT_EQ(split_text("\xc3z\xe2\x82", TextSplit::kCharacters), (Tokens{"\xc3", "z", "\xe2", "\x82"}));
}

TEST(TextFeatures, HashedAndVocabularyIdsPaddedToTheLength) {
  FeatureSpec hashed = spec("text", FeatureType::kBytes, {});
  hashed.split = TextSplit::kWords;
  hashed.length = 4;
  hashed.hash_buckets = 1000;
  FeatureSpec looked_up = spec("same", FeatureType::kBytes, {});
  looked_up.split = TextSplit::kWords;
  looked_up.length = 6;
  looked_up.vocabulary = {"the", "compiler", "gnu"};
  looked_up.has_default = true;
  looked_up.default_bytes = {"GNU"};
  auto schema = ExampleSchema::create({hashed, looked_up});
  ASSERT_TRUE(schema.ok()) << schema.status().message();
  ASSERT_EQ(schema->row_size(), 10u);
  std::vector<float> row(10, -1.0f);
  auto bucket = [](const char* token) { return float(1 + fingerprint64(token) % 999); };
  ExampleBuilder b;
  b.add_bytes("text", {"The GNU compiler, for C and C++"});  // 7 tokens: truncated to 4
  b.add_bytes("same", {"the GNU C compiler"});
  ASSERT_TRUE(schema->parse(b.serialize(), row.data()).ok());
  EXPECT_EQ(row, (std::vector<float>{bucket("the"), bucket("gnu"), bucket("compiler"), bucket("for"),  //
                                     2, 4, 1, 3, 0, 0}));
  b.clear();
  b.add_bytes("text", {"gnu"});  // padded; `same` from its default
  ASSERT_TRUE(schema->parse(b.serialize(), row.data()).ok());
  EXPECT_EQ(row, (std::vector<float>{bucket("gnu"), 0, 0, 0, 4, 0, 0, 0, 0, 0}));
  b.clear();
  b.add_bytes("text", {"one", "two"});
  EXPECT_EQ(schema->parse(b.serialize(), row.data()).message(),
            "feature 'text': a text feature holds one string, got 2");
}

TEST(TextFeatures, BadSpecsNameTheFeature) {
  auto error = [](auto change) {
    FeatureSpec text = spec("title", FeatureType::kBytes, {});
    text.split = TextSplit::kWords;
    text.length = 8;
    text.hash_buckets = 100;
    change(text);
    return ExampleSchema::create({text}).status().message();
  };
  EXPECT_EQ(error([](FeatureSpec&) {}), "");
  EXPECT_EQ(error([](FeatureSpec& f) { f.length = 0; }),
            "feature 'title': length: required for a text feature (the ids per example)");
  EXPECT_EQ(error([](FeatureSpec& f) { f.shape = {8}; }),
            "feature 'title': a text feature has length, not shape");
  EXPECT_EQ(error([](FeatureSpec& f) { f.vocabulary = {"a"}; }),
            "feature 'title': a text feature takes hash_buckets or a vocabulary (one of the two)");
  EXPECT_EQ(error([](FeatureSpec& f) { f.hash_buckets = 0; }),
            "feature 'title': a text feature takes hash_buckets or a vocabulary (one of the two)");
  EXPECT_EQ(error([](FeatureSpec& f) { f.hash_buckets = 1; }),
            "feature 'title': hash_buckets: a text feature needs 2 or more (0 is padding)");
  EXPECT_EQ(error([](FeatureSpec& f) {
              f.hash_buckets = 0;
              f.vocabulary = {"a", "b", "a"};
            }),
            "feature 'title': vocabulary: 'a' is there twice");
  EXPECT_EQ(error([](FeatureSpec& f) { f.split = TextSplit::kNone; }),
            "feature 'title': length and vocabulary need a split (words or characters)");
  EXPECT_EQ(error([](FeatureSpec& f) { f.type = FeatureType::kInt64; }),
            "feature 'title': split, length and vocabulary apply to strings");
}

}  // namespace
}  // namespace systole
