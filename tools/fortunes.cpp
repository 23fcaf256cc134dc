// SPDX-License-Identifier: Apache-2.0
// Fortunes as next-character windows: text in, TFRecords out.
#include "fortunes.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>

#include "read_file.h"
#include "sharded_writer.h"
#include "systole/output_file.h"
#include "systole/tf_example.h"

namespace systole {
namespace {

constexpr const char* kFortuneDir = "/usr/share/games/fortunes";

// The fortune files of a directory: regular files (not the .u8 links) with
// no extension (not the strfile .dat indexes), in name order.
std::vector<std::string> fortune_files(const std::string& dir) {
  std::vector<std::string> files;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* entry = ::readdir(d)) {
      const std::string name = entry->d_name, path = dir + "/" + name;
      struct stat info;
      if (name.find('.') == std::string::npos && ::lstat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode))
        files.push_back(path);
    }
    ::closedir(d);
  }
  std::sort(files.begin(), files.end());
  return files;
}

// A fortune as the model reads it (see fortunes.h).
std::string clean(const std::string& raw) {
  std::string text;
  for (char c : raw) {
    const unsigned char byte = static_cast<unsigned char>(c);
    if (c == '\b') {
      if (!text.empty()) text.pop_back();  // c BACKSPACE c: the second stays
    } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
      if (!text.empty() && text.back() != ' ') text += ' ';
    } else if (byte >= 0x20 && byte != 0x7f) {
      text += c;
    }
  }
  if (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

std::string joined(const std::vector<std::string>& characters, std::size_t first, std::size_t last) {
  std::string text;
  for (std::size_t i = first; i < last; ++i) text += characters[i];
  return text;
}

// The count-based baseline: P(next | previous character) from the
// training fortunes' character pairs with add-alpha smoothing over the
// vocabulary's ids and the unknown id, alpha picked from a grid by the
// validation cross-entropy (the baseline's best case). Scored over the
// positions the windows predict: every character of a fortune but its first.
struct Bigram {
  double alpha = 0, validation_bits = 0, test_bits = 0;
};

Bigram fit_bigram(const std::vector<std::vector<std::string>>& characters, const std::vector<int>& split_of,
                  const std::vector<std::pair<uint64_t, std::string>>& vocabulary) {
  std::map<std::string, std::size_t> id;
  for (std::size_t i = 0; i < vocabulary.size(); ++i) id[vocabulary[i].second] = i + 1;  // 0: unknown
  const std::size_t ids = vocabulary.size() + 1;
  const auto id_of = [&](const std::string& c) {
    const auto found = id.find(c);
    return found == id.end() ? std::size_t(0) : found->second;
  };
  std::vector<double> pairs(ids * ids, 0.0), firsts(ids, 0.0);
  for (std::size_t f = 0; f < characters.size(); ++f) {
    if (split_of[f] != 0) continue;
    for (std::size_t i = 1; i < characters[f].size(); ++i) {
      const std::size_t a = id_of(characters[f][i - 1]), b = id_of(characters[f][i]);
      pairs[a * ids + b] += 1;
      firsts[a] += 1;
    }
  }
  const auto bits = [&](int split, double alpha) {
    double sum = 0;
    uint64_t count = 0;
    for (std::size_t f = 0; f < characters.size(); ++f) {
      if (split_of[f] != split) continue;
      for (std::size_t i = 1; i < characters[f].size(); ++i) {
        const std::size_t a = id_of(characters[f][i - 1]), b = id_of(characters[f][i]);
        sum -= std::log2((pairs[a * ids + b] + alpha) / (firsts[a] + alpha * double(ids)));
        ++count;
      }
    }
    return count ? sum / double(count) : 0.0;
  };
  Bigram best;
  for (double alpha : {0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0}) {
    const double validation = bits(1, alpha);
    if (best.alpha == 0 || validation < best.validation_bits) best = {alpha, validation, bits(2, alpha)};
  }
  return best;
}

}  // namespace

Status write_fortunes(const FortunesOptions& options) {
  const double held_out = options.validation_fraction + options.test_fraction;
  if (!(options.validation_fraction > 0 && options.test_fraction > 0 && held_out < 1))
    return Status(StatusCode::kInvalidArgument,
                  "--validation-fraction and --test-fraction: each above 0, together below 1");
  if (options.length == 0 || options.length > 4096)
    return Status(StatusCode::kInvalidArgument, "--length: 1 to 4096 characters");
  const std::vector<std::string> files = options.files.empty() ? fortune_files(kFortuneDir) : options.files;
  if (files.empty())
    return Status(StatusCode::kNotFound,
                  std::string("no fortune file in ") + kFortuneDir +
                      ": install Debian's fortunes package (apt-get install fortunes), "
                      "or give --files");

  // Every fortune once, in the order first read.
  std::vector<std::string> fortunes;
  std::set<std::string> seen;
  std::string input;  // all the bytes read, for the fingerprint
  for (const std::string& file : files) {
    auto bytes = read_regular_file(file);
    if (!bytes.ok()) return bytes.status();
    input += *bytes;
    std::istringstream lines(*bytes + "\n%\n");  // the last entry needs no closing %
    std::string line, entry;
    while (std::getline(lines, line)) {
      if (line != "%" && line != "%\r") {
        entry += line + "\n";
        continue;
      }
      std::string text = clean(entry);
      entry.clear();
      if (!text.empty() && seen.insert(text).second) fortunes.push_back(std::move(text));
    }
  }
  if (fortunes.empty()) return Status(StatusCode::kInvalidArgument, "the fortune files hold no text");

  // The split, then the vocabulary from the training fortunes.
  enum Split { kTrain, kValidation, kTest };
  std::vector<std::vector<std::string>> characters(fortunes.size());
  std::vector<int> split_of(fortunes.size());
  std::map<std::string, uint64_t> counts;
  for (std::size_t f = 0; f < fortunes.size(); ++f) {
    characters[f] = split_text(fortunes[f], TextSplit::kCharacters);
    const double u =
        double(fingerprint64(std::to_string(options.seed) + "/" + fortunes[f]) >> 11) * 0x1.0p-53;
    split_of[f] = u < options.test_fraction ? kTest : u < held_out ? kValidation : kTrain;
    if (split_of[f] == kTrain)
      for (const std::string& c : characters[f]) ++counts[c];
  }
  std::vector<std::pair<uint64_t, std::string>> by_count;
  for (const auto& [c, n] : counts) by_count.push_back({n, c});
  std::stable_sort(by_count.begin(), by_count.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });  // ties in byte order
  if (by_count.size() > options.vocabulary_size) by_count.resize(options.vocabulary_size);
  std::string vocabulary;
  std::set<std::string> known;
  for (const auto& [n, c] : by_count) {
    vocabulary += c + "\n";
    known.insert(c);
  }

  // Windows of next-character predictions.
  std::vector<std::string> records[3];
  uint64_t fortunes_in[3] = {}, characters_in[3] = {}, unknown_in[3] = {};
  for (std::size_t f = 0; f < fortunes.size(); ++f) {
    const std::vector<std::string>& text = characters[f];
    const int split = split_of[f];
    ++fortunes_in[split];
    characters_in[split] += text.size();
    for (const std::string& c : text) unknown_in[split] += !known.count(c);
    for (std::size_t s = 0; s + 1 < text.size(); s += options.length) {
      const std::size_t end = std::min<std::size_t>(s + options.length, text.size() - 1);
      ExampleBuilder builder;
      builder.add_bytes("context", {joined(text, s, end)});
      builder.add_bytes("next", {joined(text, s + 1, end + 1)});
      records[split].push_back(builder.serialize());
    }
  }
  const Bigram bigram = fit_bigram(characters, split_of, by_count);
  std::mt19937_64 rng(options.seed);
  for (auto& split : records) std::shuffle(split.begin(), split.end(), rng);
  for (int split = kTrain; split <= kTest; ++split)
    if (records[split].empty())
      return Status(StatusCode::kInvalidArgument, std::string("the split leaves the ") + kSplitNames[split] +
                                                      " set empty (" + std::to_string(fortunes.size()) +
                                                      " fortunes)");

  SYSTOLE_RETURN_IF_ERROR(write_splits(options.out, records, options.shards, options.compression));
  SYSTOLE_RETURN_IF_ERROR(write_file(options.out + "/vocabulary.txt", vocabulary));

  nlohmann::ordered_json report;
  report["files"] = files;
  report["input_bytes"] = input.size();
  report["input_fingerprint64"] = fingerprint64_hex(input);
  report["fortunes"] = fortunes.size();
  report["seed"] = options.seed;
  report["length"] = options.length;
  report["vocabulary"] = by_count.size();
  report["classes"] = options.vocabulary_size + 2;
  report["bigram"] = {{"alpha", bigram.alpha},
                      {"validation_bits_per_character", bigram.validation_bits},
                      {"test_bits_per_character", bigram.test_bits}};
  for (int split = kTrain; split <= kTest; ++split) {
    auto& entry = report["splits"][kSplitNames[split]];
    entry["fortunes"] = fortunes_in[split];
    entry["characters"] = characters_in[split];
    entry["unknown_characters"] = unknown_in[split];
    entry["windows"] = records[split].size();
  }
  SYSTOLE_RETURN_IF_ERROR(write_file(options.out + "/dataset.json", report.dump(2) + "\n"));

  std::printf("read %zu fortunes from %zu file(s) (%zu bytes, Fingerprint64 %s)\n", fortunes.size(),
              files.size(), input.size(), fingerprint64_hex(input).c_str());
  std::printf("vocabulary: the %zu most frequent training characters (%u classes with padding and unknown)\n",
              by_count.size(), options.vocabulary_size + 2);
  std::printf(
      "wrote %zu training, %zu validation and %zu test windows of %u characters (fortunes: %llu, %llu, "
      "%llu) to %s\n",
      records[kTrain].size(), records[kValidation].size(), records[kTest].size(), options.length,
      (unsigned long long)fortunes_in[kTrain], (unsigned long long)fortunes_in[kValidation],
      (unsigned long long)fortunes_in[kTest], options.out.c_str());
  std::printf("bigram baseline (add-%g): %.4f bits per character on validation, %.4f on test\n", bigram.alpha,
              bigram.validation_bits, bigram.test_bits);
  return ok_status();
}

}  // namespace systole
