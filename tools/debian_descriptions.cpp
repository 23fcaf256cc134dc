// SPDX-License-Identifier: Apache-2.0
// Package descriptions and sections: deb822 stanzas in, TFRecords out.
#include "debian_descriptions.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>

#include "debian_packages.h"
#include "read_file.h"
#include "sharded_writer.h"
#include "systole/output_file.h"
#include "systole/tf_example.h"

namespace systole {
namespace {

struct Package {
  std::string name, source, section, description;
};

std::string trim(const std::string& text) {
  const std::size_t first = text.find_first_not_of(" \t");
  if (first == std::string::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

// What a package list says about the packages it lists, each name once
// (the first stanza of a name wins). Counts the stanzas left out.
struct Reading {
  std::map<std::string, Package> packages;  // by name
  uint64_t stanzas = 0, without_section = 0, without_description = 0;

  void add(const Stanza& stanza) {
    ++stanzas;
    const auto field = [&](const char* name) {
      const auto found = stanza.find(name);
      return found == stanza.end() ? std::string() : found->second;
    };
    Package p;
    p.name = trim(field("package"));
    if (p.name.empty() || packages.count(p.name)) return;
    // "contrib/net" is in section net; "Source: foo (1.2-1)" is foo.
    p.section = trim(field("section"));
    p.section = p.section.substr(p.section.rfind('/') + 1);
    const std::string description = field("description");
    p.description = trim(description.substr(0, description.find('\n')));
    p.source = trim(field("source"));
    p.source = p.source.empty() ? p.name : p.source.substr(0, p.source.find(' '));
    if (p.section.empty()) {
      ++without_section;
      return;
    }
    if (p.description.empty()) {
      ++without_description;
      return;
    }
    packages.emplace(p.name, std::move(p));
  }
};

}  // namespace

Status write_debian_descriptions(const DebianDescriptionsOptions& options) {
  const double held_out = options.validation_fraction + options.test_fraction;
  if (!(options.validation_fraction >= 0 && options.test_fraction > 0 && held_out < 1))
    return Status(StatusCode::kInvalidArgument,
                  "--validation-fraction and --test-fraction: each in [0, 1) (the test share above 0), "
                  "together below 1");
  if (options.classes < 2) return Status(StatusCode::kInvalidArgument, "--classes: at least 2");

  // The input, whole: its fingerprint names what the data set was made from.
  std::string input, sources;
  if (options.files.empty()) {
    if (std::system("command -v apt-cache >/dev/null 2>&1") != 0)
      return Status(StatusCode::kNotFound, "apt-cache is not installed (or give --packages FILE)");
    auto text = apt_cache_dumpavail();
    if (!text.ok()) return text.status();
    input = std::move(text).value();
    sources = "apt-cache dumpavail";
  } else {
    for (const std::string& file : options.files) {
      auto bytes = read_regular_file(file);
      if (!bytes.ok()) return bytes.status();
      input += *bytes + "\n";  // a file's last stanza ends with the file
      sources += (sources.empty() ? "" : ", ") + file;
    }
  }
  Reading reading;
  std::istringstream in(input);
  SYSTOLE_RETURN_IF_ERROR(read_deb822(in, sources, [&](const Stanza& stanza) { reading.add(stanza); }));
  if (reading.packages.empty())
    return Status(StatusCode::kNotFound,
                  sources + " lists no package with a section and a description" +
                      (options.files.empty()
                           ? ": the package lists are empty; run `apt-get update` (as root) to fetch them"
                           : ""));

  // A description several packages share: kept once, with the first of
  // them in name order.
  std::map<std::string, const Package*> by_description;
  for (const auto& [name, package] : reading.packages) by_description.emplace(package.description, &package);
  std::vector<const Package*> kept;
  for (const auto& [name, package] : reading.packages)
    if (by_description.at(package.description) == &package) kept.push_back(&package);

  // The classes - 1 largest sections keep their names; the rest are other.
  std::map<std::string, uint64_t> section_sizes;
  for (const Package* p : kept) ++section_sizes[p->section];
  if (section_sizes.size() < options.classes - 1)
    return Status(StatusCode::kInvalidArgument,
                  "--classes " + std::to_string(options.classes) + ": the package lists hold " +
                      std::to_string(section_sizes.size()) + " sections; give at most " +
                      std::to_string(section_sizes.size() + 1));
  std::vector<std::pair<uint64_t, std::string>> by_size;
  for (const auto& [section, size] : section_sizes) by_size.push_back({size, section});
  std::stable_sort(by_size.begin(), by_size.end(), [](const auto& a, const auto& b) {
    return a.first > b.first;
  });  // ties stay in name order
  std::set<std::string> named;
  for (uint32_t i = 0; i + 1 < options.classes; ++i) named.insert(by_size[i].second);
  if (named.count("other"))
    return Status(StatusCode::kInvalidArgument, "a section is called 'other', the name of the merged class");
  std::vector<std::string> labels(named.begin(), named.end());
  labels.insert(std::lower_bound(labels.begin(), labels.end(), "other"), "other");
  std::map<std::string, int64_t> label_of;
  for (std::size_t i = 0; i < labels.size(); ++i) label_of[labels[i]] = int64_t(i);

  // The split, by source package.
  enum Split { kTrain, kValidation, kTest };
  std::vector<std::string> records[3];
  std::vector<std::vector<uint64_t>> per_label(3, std::vector<uint64_t>(labels.size()));
  std::set<std::string> split_sources[3];
  for (const Package* p : kept) {
    const double u = double(fingerprint64(std::to_string(options.seed) + "/" + p->source) >> 11) * 0x1.0p-53;
    const Split split = u < options.test_fraction ? kTest : u < held_out ? kValidation : kTrain;
    const std::string section = named.count(p->section) ? p->section : "other";
    const int64_t label = label_of.at(section);
    ExampleBuilder builder;
    builder.add_bytes("text", {p->description});
    builder.add_int64s("label", &label, 1);
    builder.add_bytes("section", {section});
    builder.add_bytes("package", {p->name});
    builder.add_bytes("source", {p->source});
    records[split].push_back(builder.serialize());
    ++per_label[split][std::size_t(label)];
    split_sources[split].insert(p->source);
  }
  // Shuffled (seeded), so no shard holds one stretch of the alphabet.
  std::mt19937_64 rng(options.seed);
  for (auto& split : records) std::shuffle(split.begin(), split.end(), rng);
  if (records[kTrain].empty() || records[kTest].empty())
    return Status(StatusCode::kInvalidArgument, "the split leaves the training or the test set empty (" +
                                                    std::to_string(kept.size()) + " descriptions)");

  SYSTOLE_RETURN_IF_ERROR(write_splits(options.out, records, options.shards, options.compression));
  std::string names;
  for (const std::string& label : labels) names += label + "\n";
  SYSTOLE_RETURN_IF_ERROR(write_file(options.out + "/sections.txt", names));

  nlohmann::ordered_json report;
  report["source"] = sources;
  report["input_bytes"] = input.size();
  report["input_fingerprint64"] = fingerprint64_hex(input);
  report["stanzas"] = reading.stanzas;
  report["packages"] = reading.packages.size();
  report["without_section"] = reading.without_section;
  report["without_description"] = reading.without_description;
  report["distinct_descriptions"] = kept.size();
  report["seed"] = options.seed;
  report["sections"] = section_sizes.size();
  report["labels"] = labels;
  for (int split = kTrain; split <= kTest; ++split) {
    auto& entry = report["splits"][kSplitNames[split]];
    entry["records"] = records[split].size();
    entry["source_packages"] = split_sources[split].size();
    entry["per_label"] = per_label[split];
  }
  SYSTOLE_RETURN_IF_ERROR(write_file(options.out + "/dataset.json", report.dump(2) + "\n"));

  std::printf("read %zu packages with a section and a description from %s (%zu bytes, Fingerprint64 %s)\n",
              reading.packages.size(), sources.c_str(), input.size(), fingerprint64_hex(input).c_str());
  std::printf(
      "kept %zu distinct descriptions in %zu sections, as %zu classes (%zu sections merged into other)\n",
      kept.size(), section_sizes.size(), labels.size(), section_sizes.size() - named.size());
  std::printf(
      "wrote %zu training, %zu validation and %zu test records (by source package: %zu, %zu, %zu) to %s\n",
      records[kTrain].size(), records[kValidation].size(), records[kTest].size(),
      split_sources[kTrain].size(), split_sources[kValidation].size(), split_sources[kTest].size(),
      options.out.c_str());
  return ok_status();
}

}  // namespace systole
