// SPDX-License-Identifier: Apache-2.0
// Shapes and the checked reading of a layer's config fields.
#include <cmath>
#include <sstream>

#include "systole/layer.h"

namespace systole {
namespace {

Status invalid(const std::string& key, const std::string& why) {
  return Status(StatusCode::kInvalidArgument, key + ": " + why);
}

// "3" -> {3}; "[3, 2]" or "3,2" -> {3, 2}; false for anything else.
bool parse_integers(const std::string& text, std::vector<uint64_t>& out) {
  std::string body = text;
  if (!body.empty() && body.front() == '[') {
    if (body.back() != ']') return false;
    body = body.substr(1, body.size() - 2);
  }
  std::stringstream stream(body);
  std::string item;
  while (std::getline(stream, item, ',')) {
    const std::size_t first = item.find_first_not_of(' ');
    const std::size_t last = item.find_last_not_of(' ');
    if (first == std::string::npos) return false;
    item = item.substr(first, last - first + 1);
    if (item.size() > 9 || item.find_first_not_of("0123456789") != std::string::npos) return false;
    out.push_back(std::stoull(item));
  }
  return !out.empty();
}

}  // namespace

std::string shape_text(const Shape& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

uint64_t shape_elements(const Shape& shape) {
  uint64_t count = 1;
  for (uint32_t d : shape) count *= d;
  return count;
}

void pass_through(const Activations& input, Activations& output) {
  output.batch = input.batch;
  output.shape = input.shape;
  output.values = input.values;
}

void zeros_like(const Activations& input, Activations& gradient) {
  gradient.batch = input.batch;
  gradient.shape = input.shape;
  gradient.values.assign(input.values.size(), 0.0f);
}

namespace {

// `tensor` as `count` values on the card: itself, resized, where its memory
// has room (an earlier pass's), else a new tensor.
Status card_values(LayerContext& context, DeviceTensor& tensor, std::size_t count) {
  if (tensor && !tensor.is_view() && tensor.room() >= count) {
    // An earlier pass's tensor holds it (a shorter batch, or the full one
    // again): the values are written where they were.
    tensor = tensor.resized(count).value();
    return ok_status();
  }
  tensor = DeviceTensor();  // its memory goes before the new tensor's is taken
  auto made = context.matmul->allocate(count);
  if (!made.ok()) return made.status();
  tensor = std::move(made).value();
  return ok_status();
}

}  // namespace

Status gradient_like(LayerContext& context, const Activations& input, Activations& gradient) {
  if (!gradient.on_card) {
    gradient.card = DeviceTensor();
    zeros_like(input, gradient);
    return ok_status();
  }
  gradient.batch = input.batch;
  gradient.shape = input.shape;
  return place_values(context, gradient);
}

Status place_values(LayerContext& context, Activations& tensor) {
  const std::size_t count = tensor.elements();
  if (!tensor.on_card) {
    tensor.card = DeviceTensor();
    tensor.values.resize(count);
    return ok_status();
  }
  tensor.values.clear();
  tensor.values.shrink_to_fit();
  return card_values(context, tensor.card, count);
}

const std::string* LayerArgs::find(const std::string& key) {
  for (std::size_t i = 0; i < config_.fields.size(); ++i)
    if (config_.fields[i].first == key) {
      used_[i] = true;
      return &config_.fields[i].second;
    }
  return nullptr;
}

bool LayerArgs::has(const std::string& key) const {
  for (const auto& field : config_.fields)
    if (field.first == key) return true;
  return false;
}

Result<uint32_t> LayerArgs::positive(const std::string& key, uint32_t fallback) {
  const std::string* text = find(key);
  if (!text) return fallback;
  std::vector<uint64_t> values;
  if (!parse_integers(*text, values) || values.size() != 1 || values[0] == 0 || values[0] > (1u << 24))
    return invalid(key, "expected a positive integer (at most 16777216), got '" + *text + "'");
  return uint32_t(values[0]);
}

Result<std::vector<uint32_t>> LayerArgs::positive_list(const std::string& key) {
  const std::string* text = find(key);
  std::vector<uint64_t> values;
  bool good = text && parse_integers(*text, values);
  for (uint64_t value : values) good = good && value > 0 && value <= (1u << 24);
  if (!good)
    return invalid(key, "expected a positive integer or a list of them (each at most 16777216), got '" +
                            (text ? *text : std::string()) + "'");
  return std::vector<uint32_t>(values.begin(), values.end());
}

Result<std::pair<uint32_t, uint32_t>> LayerArgs::pair(const std::string& key,
                                                      std::pair<uint32_t, uint32_t> fallback) {
  const std::string* text = find(key);
  if (!text) return fallback;
  std::vector<uint64_t> values;
  if (!parse_integers(*text, values) || values.size() > 2 || values[0] == 0 || values.back() == 0 ||
      values[0] > 4096 || values.back() > 4096)
    return invalid(key, "expected a positive integer or a pair, got '" + *text + "'");
  return std::make_pair(uint32_t(values[0]), uint32_t(values.back()));
}

Result<float> LayerArgs::number(const std::string& key, float fallback, float low, float high,
                                bool high_inclusive) {
  const std::string* text = find(key);
  if (!text) return fallback;
  char* end = nullptr;
  const double value = std::strtod(text->c_str(), &end);
  const bool below_high = high_inclusive ? value <= high : value < high;
  if (text->empty() || *end != '\0' || !std::isfinite(value) || value < low || !below_high) {
    std::ostringstream range;
    range.precision(9);  // 16777216, not 1.67772e+07
    range << "expected a number in [" << low << ", " << high << (high_inclusive ? "]" : ")");
    return invalid(key, range.str() + ", got '" + *text + "'");
  }
  return float(value);
}

Result<std::string> LayerArgs::choice(const std::string& key, const std::vector<std::string>& options,
                                      const std::string& fallback) {
  const std::string* text = find(key);
  if (!text) return fallback;
  std::string expected;
  for (const std::string& option : options) {
    if (*text == option) return option;
    expected += (expected.empty() ? "" : " or ") + option;
  }
  return invalid(key, "expected " + expected + ", got '" + *text + "'");
}

Result<bool> LayerArgs::boolean(const std::string& key, bool fallback) {
  const std::string* text = find(key);
  if (!text) return fallback;
  if (*text == "true") return true;
  if (*text == "false") return false;
  return invalid(key, "expected true or false, got '" + *text + "'");
}

Status LayerArgs::unknown_fields() const {
  for (std::size_t i = 0; i < config_.fields.size(); ++i)
    if (!used_[i]) return invalid(config_.fields[i].first, "unknown field for " + config_.type);
  return ok_status();
}

}  // namespace systole
