// SPDX-License-Identifier: Apache-2.0
// Package relationships as interactions: deb822 stanzas in, TFRecords out.
#include "debian_packages.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>

#include "read_file.h"
#include "sharded_writer.h"
#include "systole/tf_example.h"

namespace systole {
namespace {

using Edge = std::pair<std::string, std::string>;  // (package, dependency)

// The package name of one relationship alternative: "libc6:any (>= 2.34)
// [amd64] <!nocheck>" is "libc6".
std::string relation_name(const std::string& text) {
  const std::size_t first = text.find_first_not_of(" \t\n");
  if (first == std::string::npos) return {};
  std::size_t last = first;
  while (last < text.size() && !std::strchr(" \t\n(:[<", text[last])) ++last;
  return text.substr(first, last - first);
}

// Adds the edges of a package not seen before.
void add_edges(const Stanza& fields, std::set<std::string>& packages, std::set<Edge>& edges) {
  const auto name = fields.find("package");
  if (name == fields.end() || !packages.insert(name->second).second) return;
  for (const char* relation : {"depends", "pre-depends", "recommends"}) {
    const auto found = fields.find(relation);
    if (found == fields.end()) continue;
    std::stringstream groups(found->second);
    std::string group;
    while (std::getline(groups, group, ',')) {
      const std::string dependency = relation_name(group.substr(0, group.find('|')));
      if (!dependency.empty() && dependency != name->second) edges.insert({name->second, dependency});
    }
  }
}

std::string example(const std::string& package, const std::string& dependency, int64_t label) {
  ExampleBuilder builder;
  builder.add_bytes("package", {package});
  builder.add_bytes("dependency", {dependency});
  builder.add_int64s("label", &label, 1);
  return builder.serialize();
}

// Writes `records` over `shards` files PREFIX-0000i-of-0000N.tfrecord.
Status write_shards(const std::string& prefix, const std::vector<std::string>& records, uint32_t shards,
                    Compression compression) {
  auto writer = ShardedWriter::create(prefix, shards, records.size(), compression);
  if (!writer.ok()) return writer.status();
  for (const std::string& record : records) SYSTOLE_RETURN_IF_ERROR(writer->write(record));
  return writer->close();
}

}  // namespace

Status read_deb822(std::istream& in, const std::string& source,
                   const std::function<void(const Stanza&)>& each) {
  std::string line, field;
  Stanza fields;
  uint64_t number = 0;
  auto finish = [&]() {
    if (!fields.empty()) each(fields);
    fields.clear();
    field.clear();
  };
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) {
      finish();
      continue;
    }
    if (line[0] == ' ' || line[0] == '\t') {  // a continuation
      if (field.empty())
        return Status(StatusCode::kInvalidArgument,
                      source + ": line " + std::to_string(number) + ": a continuation line outside a field");
      fields[field] += "\n" + line;
      continue;
    }
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos || colon == 0)
      return Status(StatusCode::kInvalidArgument, source + ": line " + std::to_string(number) +
                                                      ": expected 'Field: value', got '" +
                                                      line.substr(0, 60) + "'");
    field = line.substr(0, colon);
    std::transform(field.begin(), field.end(), field.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    const std::size_t start = line.find_first_not_of(" \t", colon + 1);
    fields[field] = start == std::string::npos ? "" : line.substr(start);
  }
  finish();
  return ok_status();
}

Status read_deb822_file(const std::string& file, const std::function<void(const Stanza&)>& each) {
  auto bytes = read_regular_file(file);
  if (!bytes.ok()) return bytes.status();
  std::istringstream in(*bytes);
  return read_deb822(in, file, each);
}

Result<std::string> apt_cache_dumpavail() {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen("apt-cache dumpavail 2>/dev/null", "r"), ::pclose);
  if (!pipe) return Status(StatusCode::kUnavailable, "apt-cache dumpavail: cannot run");
  std::string text;
  char buffer[1 << 16];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe.get())) > 0;) text.append(buffer, n);
  return text;
}

Status write_debian_packages(const DebianPackagesOptions& options) {
  if (!(options.test_fraction > 0 && options.test_fraction < 1))
    return Status(StatusCode::kInvalidArgument, "--test-fraction: must be in (0, 1)");
  std::set<std::string> packages;
  std::set<Edge> edges;
  const auto each = [&](const Stanza& stanza) { add_edges(stanza, packages, edges); };
  for (const std::string& file : options.files) SYSTOLE_RETURN_IF_ERROR(read_deb822_file(file, each));
  std::string sources = std::to_string(options.files.size()) + " file(s)";
  if (options.apt_cache && std::system("command -v apt-cache >/dev/null 2>&1") == 0) {
    auto text = apt_cache_dumpavail();
    if (!text.ok()) return text.status();
    std::istringstream in(*text);
    SYSTOLE_RETURN_IF_ERROR(read_deb822(in, "apt-cache dumpavail", each));
    sources += " and apt-cache dumpavail";
  }
  if (edges.empty())
    return Status(StatusCode::kInvalidArgument, "no package relationships found in " + sources);

  // Hold out a seeded share of each package's edges, keeping one in training.
  std::mt19937_64 rng(options.seed);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<Edge> train, test;
  std::set<std::string> items;
  for (auto it = edges.begin(); it != edges.end();) {
    auto end = it;
    std::vector<Edge> group;
    while (end != edges.end() && end->first == it->first) group.push_back(*end++);
    std::shuffle(group.begin(), group.end(), rng);
    for (std::size_t i = 0; i < group.size(); ++i) {
      items.insert(group[i].second);
      (i > 0 && uniform(rng) < options.test_fraction ? test : train).push_back(group[i]);
    }
    it = end;
  }
  // Negatives: items drawn uniformly that are not the package's edges.
  const std::vector<std::string> catalogue(items.begin(), items.end());
  std::uniform_int_distribution<std::size_t> pick(0, catalogue.size() - 1);
  auto with_negatives = [&](const std::vector<Edge>& positives, uint32_t negatives) {
    std::vector<std::string> records;
    for (const Edge& edge : positives) {
      records.push_back(example(edge.first, edge.second, 1));
      for (uint32_t n = 0; n < negatives; ++n) {
        std::string item = catalogue[pick(rng)];
        for (int tries = 0; tries < 16 && edges.count({edge.first, item}); ++tries)
          item = catalogue[pick(rng)];
        records.push_back(example(edge.first, item, 0));
      }
    }
    std::shuffle(records.begin(), records.end(), rng);
    return records;
  };
  const std::vector<std::string> train_records = with_negatives(train, options.train_negatives),
                                 test_records = with_negatives(test, options.negatives);
  if (::mkdir(options.out.c_str(), 0755) != 0 && errno != EEXIST)
    return Status(StatusCode::kUnavailable,
                  options.out + ": cannot create the directory: " + std::strerror(errno));
  const uint32_t shards = uint32_t(std::min<std::size_t>(options.shards, train_records.size()));
  SYSTOLE_RETURN_IF_ERROR(write_shards(options.out + "/train", train_records, shards, options.compression));
  SYSTOLE_RETURN_IF_ERROR(write_shards(options.out + "/test", test_records, 1, options.compression));
  std::printf(
      "read %zu packages with %zu relationships (Depends, Pre-Depends, Recommends) to %zu distinct "
      "dependencies from %s\n",
      packages.size(), edges.size(), items.size(), sources.c_str());
  std::printf(
      "wrote %zu training records (%zu edges + %u negatives each) in %u file(s) and %zu test records "
      "(%zu held-out edges + %u negatives each) to %s/{train,test}-*.tfrecord\n",
      train_records.size(), train.size(), options.train_negatives, shards, test_records.size(), test.size(),
      options.negatives, options.out.c_str());
  return ok_status();
}

}  // namespace systole
