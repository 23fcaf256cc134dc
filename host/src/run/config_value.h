// SPDX-License-Identifier: Apache-2.0
// The value types of accel_train's config keys: how a YAML node (or a
// flag's text) becomes a value, strictly (a whole number is digits only, a
// number is all of the text), and how a value is written back so that it
// reads back to the same bits.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "systole/status.h"

namespace systole::config {

inline Status invalid(const std::string& message) { return Status(StatusCode::kInvalidArgument, message); }

inline std::string joined(const std::vector<std::string>& names, const char* separator = ", ") {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : separator) + name;
  return text;
}

// How a node was written, for errors: a scalar as is, anything else as
// one line of YAML.
inline std::string written(const YAML::Node& node) {
  if (node.IsScalar()) return node.Scalar();
  YAML::Emitter out;
  out << YAML::Flow << node;
  return out.c_str();
}

inline Status need_scalar(const YAML::Node& node) {
  if (node.IsScalar()) return ok_status();
  return invalid("expected a single value, got '" + written(node) + "'");
}

// The shortest decimal text that reads back to `value` (as a float when
// `single`).
inline std::string number_text(double value, bool single) {
  char text[40];
  if (std::isfinite(value) && value == std::floor(value) && std::fabs(value) < 1e15) {
    std::snprintf(text, sizeof text, "%.0f", value);
    return text;
  }
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, value);
    const double back = std::strtod(text, nullptr);
    if (single ? float(back) == float(value) : back == value) break;
  }
  return text;
}

// Whole numbers: digits only, in [0, max]; "-1", "2junk", "1e3" are refused
// rather than wrapped or cut short.
inline Result<uint64_t> parse_whole(const std::string& text, uint64_t max) {
  const bool digits =
      !text.empty() && text.size() <= 20 && text.find_first_not_of("0123456789") == std::string::npos;
  if (digits) {
    errno = 0;
    const unsigned long long value = std::strtoull(text.c_str(), nullptr, 10);
    if (errno == 0 && value <= max) return uint64_t(value);
    return invalid("'" + text + "' is larger than " + std::to_string(max));
  }
  return invalid("cannot read '" + text + "' as a whole number");
}

inline Result<double> parse_number(const std::string& text) {
  char* end = nullptr;
  const double value = text.empty() ? 0 : std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size())
    return invalid("cannot read '" + text + "' as a number");
  return value;
}

// The value types of the table: how each is read, written and described.
template <class T>
struct Value;

template <>
struct Value<std::string> {
  static constexpr const char* kType = "text";
  static Result<std::string> read(const YAML::Node& node) {
    if (node.IsNull()) return std::string();  // "trace:" with nothing after it
    SYSTOLE_RETURN_IF_ERROR(need_scalar(node));
    return node.Scalar();
  }
  static YAML::Node write(const std::string& value) { return YAML::Node(value); }
};

template <>
struct Value<bool> {
  static constexpr const char* kType = "true or false";
  static Result<bool> read(const YAML::Node& node) {
    SYSTOLE_RETURN_IF_ERROR(need_scalar(node));
    bool value = false;
    if (!YAML::convert<bool>::decode(node, value))
      return invalid("cannot read '" + node.Scalar() + "' as true or false");
    return value;
  }
  static YAML::Node write(bool value) { return YAML::Node(value); }
};

template <class Whole>
struct WholeValue {
  static constexpr const char* kType = "integer";
  static Result<Whole> read(const YAML::Node& node) {
    SYSTOLE_RETURN_IF_ERROR(need_scalar(node));
    auto value = parse_whole(node.Scalar(), std::numeric_limits<Whole>::max());
    if (!value.ok()) return value.status();
    return Whole(*value);
  }
  static YAML::Node write(Whole value) { return YAML::Node(value); }
};
template <>
struct Value<uint32_t> : WholeValue<uint32_t> {};
template <>
struct Value<uint64_t> : WholeValue<uint64_t> {};

template <class Real>
struct RealValue {
  static constexpr const char* kType = "number";
  static Result<Real> read(const YAML::Node& node) {
    SYSTOLE_RETURN_IF_ERROR(need_scalar(node));
    auto value = parse_number(node.Scalar());
    if (!value.ok()) return value.status();
    // Nothing the type cannot hold is read as something else: not an
    // overflow as infinity, not a tiny number as 0.
    const char* kind = std::is_same<Real, float>::value ? "a 32-bit number" : "a number";
    const Real real = Real(*value);
    if (!std::isfinite(real)) return invalid("'" + node.Scalar() + "' is not a finite value of " + kind);
    if (real == 0 && *value != 0)
      return invalid("'" + node.Scalar() + "' is too small for " + kind + " (it would read as 0)");
    return real;
  }
  static YAML::Node write(Real value) {
    return YAML::Node(number_text(double(value), std::is_same<Real, float>::value));
  }
};
template <>
struct Value<float> : RealValue<float> {};
template <>
struct Value<double> : RealValue<double> {};

template <>
struct Value<std::optional<float>> {
  static constexpr const char* kType = "number, or ~ for the optimizer's default";
  static Result<std::optional<float>> read(const YAML::Node& node) {
    if (node.IsNull() || (node.IsScalar() && (node.Scalar() == "~" || node.Scalar() == "null")))
      return std::optional<float>();
    auto value = Value<float>::read(node);
    if (!value.ok()) return value.status();
    return std::optional<float>(*value);
  }
  static YAML::Node write(const std::optional<float>& value) {
    return value ? Value<float>::write(*value) : YAML::Node(YAML::NodeType::Null);
  }
};

// A list of whole numbers: a YAML list, or one value, or (from a flag)
// "256,128".
template <>
struct Value<std::vector<uint32_t>> {
  static constexpr const char* kType = "list of integers";
  static Result<std::vector<uint32_t>> read(const YAML::Node& node) {
    std::vector<std::string> items;
    if (node.IsSequence()) {
      for (std::size_t i = 0; i < node.size(); ++i) {
        SYSTOLE_RETURN_IF_ERROR(need_scalar(node[i]));
        items.push_back(node[i].Scalar());
      }
    } else {
      SYSTOLE_RETURN_IF_ERROR(need_scalar(node));
      std::string text = node.Scalar();
      if (text.size() >= 2 && text.front() == '[' && text.back() == ']')
        text = text.substr(1, text.size() - 2);
      std::stringstream stream(text);
      std::string item;
      while (std::getline(stream, item, ',')) {
        item.erase(0, item.find_first_not_of(' '));
        item.erase(item.find_last_not_of(' ') + 1);
        items.push_back(item);
      }
    }
    std::vector<uint32_t> values;
    for (const std::string& item : items) {
      auto value = parse_whole(item, std::numeric_limits<uint32_t>::max());
      if (!value.ok()) return value.status();
      values.push_back(uint32_t(*value));
    }
    return values;
  }
  static YAML::Node write(const std::vector<uint32_t>& values) {
    YAML::Node node(YAML::NodeType::Sequence);
    for (uint32_t value : values) node.push_back(value);
    node.SetStyle(YAML::EmitterStyle::Flow);
    return node;
  }
};

// File patterns or names: one, or a list.
template <>
struct Value<std::vector<std::string>> {
  static constexpr const char* kType = "text, or a list of them";
  static Result<std::vector<std::string>> read(const YAML::Node& node) {
    if (node.IsScalar()) return std::vector<std::string>{node.Scalar()};
    if (!node.IsSequence())
      return invalid("expected a value or a list of values, got '" + written(node) + "'");
    std::vector<std::string> values;
    for (std::size_t i = 0; i < node.size(); ++i) {
      SYSTOLE_RETURN_IF_ERROR(need_scalar(node[i]));
      values.push_back(node[i].Scalar());
    }
    return values;
  }
  static YAML::Node write(const std::vector<std::string>& values) {
    YAML::Node node(YAML::NodeType::Sequence);
    for (const std::string& value : values) node.push_back(value);
    node.SetStyle(YAML::EmitterStyle::Flow);
    return node;
  }
};

}  // namespace systole::config
