// SPDX-License-Identifier: Apache-2.0
// Every numeric key of accel_train's config schema, read from the texts a
// user may type at the edges of the number types (-1, 0, 2^31, 2^32, 2^64,
// a fraction, past float's and double's range, infinity, NaN, a word),
// through the file and through its flag. Each text is
// either refused with an error that quotes it, or read as exactly that
// number (nothing wrapped, truncated or clamped); a value read then passes
// the key's range check exactly when the key's declared bounds (the
// "Allowed" column of docs/config.md) admit it. The table drives the test,
// so a key added to the schema is covered without a line here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "config_schema.h"

namespace systole {
namespace {

const std::vector<std::string> kTexts = {
    "-1",  "0", "1.5", "2147483648", "4294967296", "18446744073709551616", "1e39", "1e400", "1e-50", "inf",
    "nan", "x", ""};

bool numeric(const ConfigField& field) {
  return field.type == "integer" || field.type.rfind("number", 0) == 0;
}

// Whether `value` lies in the bounds a field's "Allowed" text states:
// "[a, b]", "(a, b]", "[a, b)", ">= a", "> a", "<= b", "< b", "a positive
// number", or nothing (no bounds).
std::optional<bool> admitted(const std::string& allowed, double value) {
  if (allowed.empty()) return true;
  if (allowed == "a positive number") return value > 0;
  if (allowed[0] == '[' || allowed[0] == '(') {
    const std::size_t comma = allowed.find(", ");
    if (comma == std::string::npos) return std::nullopt;
    const double low = std::strtod(allowed.c_str() + 1, nullptr);
    const double high = std::strtod(allowed.c_str() + comma + 2, nullptr);
    const bool low_ok = allowed[0] == '[' ? value >= low : value > low;
    const bool high_ok = allowed.back() == ']' ? value <= high : value < high;
    return low_ok && high_ok;
  }
  for (const char* op : {">= ", "<= ", "> ", "< "}) {
    if (allowed.rfind(op, 0) != 0) continue;
    const double bound = std::strtod(allowed.c_str() + std::string(op).size(), nullptr);
    const std::string o = op;
    return o == ">= "   ? value >= bound
           : o == "<= " ? value <= bound
           : o == "> "  ? value > bound
                        : value < bound;
  }
  return std::nullopt;
}

TEST(ConfigRange, EveryNumericKeyIsReadExactlyOrRefusedQuotingTheText) {
  int keys = 0;
  for (const ConfigField& field : config_fields()) {
    if (!numeric(field)) continue;
    ++keys;
    const bool whole = field.type == "integer";
    for (const std::string& text : kTexts) {
      SCOPED_TRACE(field.key + ": '" + text + "'");
      RunConfig config;
      const Status read = field.read(YAML::Node(text), config);
      if (!read.ok()) {
        EXPECT_NE(read.message().find("'" + text + "'"), std::string::npos) << read.message();
        continue;
      }
      // Read: the value is the text's number.
      const std::string written = config_key_text(field, config);
      if (whole) {
        EXPECT_EQ(written, text) << "an integer read as another";
      } else {
        const double typed = std::strtod(text.c_str(), nullptr), got = std::strtod(written.c_str(), nullptr);
        EXPECT_TRUE(std::isfinite(typed)) << "a number beyond double's range was read as " << written;
        EXPECT_LE(std::fabs(got - typed), std::fabs(typed) * 1e-7) << "read as " << written;
      }
      // Checked: as the declared bounds say; a refusal quotes the value.
      const std::optional<bool> in_bounds = admitted(field.values, std::strtod(written.c_str(), nullptr));
      ASSERT_TRUE(in_bounds.has_value()) << "cannot read the bounds '" << field.values << "'";
      const Status checked = field.check ? field.check(config) : ok_status();
      EXPECT_EQ(checked.ok(), *in_bounds) << field.values << ": " << checked.message();
      if (!checked.ok()) {
        EXPECT_NE(checked.message().find("got " + written), std::string::npos) << checked.message();
      }
    }
    // The words and the numbers past every integer type are never read.
    for (const std::string& text : {std::string("18446744073709551616"), std::string("x"), std::string("")}) {
      if (!whole && text[0] == '1') continue;  // 2^64 is a fine real number
      RunConfig config;
      EXPECT_FALSE(field.read(YAML::Node(text), config).ok()) << field.key << ": '" << text << "'";
    }
    if (whole) {
      RunConfig config;
      EXPECT_FALSE(field.read(YAML::Node("1.5"), config).ok()) << field.key << ": a fraction";
    }
  }
  EXPECT_GE(keys, 30) << "the schema's numeric keys were not found";
}

TEST(ConfigRange, FlagsSayTheirNameAndKey) {
  for (const ConfigField& field : config_fields()) {
    if (!numeric(field) || field.flag.empty()) continue;
    RunConfig config;
    const Status status = set_config_key(field, "-x", config);
    ASSERT_FALSE(status.ok()) << field.flag;
    EXPECT_EQ(status.message().rfind(field.flag + " (" + field.key + "): ", 0), 0u) << status.message();
    EXPECT_NE(status.message().find("'-x'"), std::string::npos) << status.message();
  }
}

}  // namespace
}  // namespace systole
