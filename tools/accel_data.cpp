// SPDX-License-Identifier: Apache-2.0
// accel_data: data into and out of TFRecord files of tf.train.Example
// records, the format accel_train's input pipeline reads.
//
//   accel_data from-idx --images X --labels Y --out PREFIX [--shards N]
//   accel_data fashion-mnist --out DIR [--shards N]
//   accel_data from-csv --csv F --out PREFIX [--shards N] [--int64 C,..] [--float C,..]
//   accel_data debian-packages --out DIR [--status FILE]... [--no-apt-cache]
//   accel_data debian-descriptions --out DIR [--packages FILE]... [--classes N]
//   accel_data fortunes --out DIR [--files FILE]... [--length N]
//   accel_data show FILE... [--records N]
//   accel_data events FILE...          (TensorBoard event files: the scalars)
//
// Shards are named PREFIX-00000-of-00008.tfrecord, as TensorFlow's tools
// name them, and hold consecutive runs of the input. Every file appears
// whole or not at all: written beside its name, fsynced, renamed.
#include <csv.h>
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "debian_descriptions.h"
#include "debian_packages.h"
#include "fortunes.h"
#include "guarded_main.h"
#include "sharded_writer.h"
#include "systole/dataset.h"
#include "systole/summary_writer.h"
#include "systole/tf_example.h"
#include "systole/tfrecord.h"

namespace {

using namespace systole;

// Examples [first, first + count) of an IDX set: `image` float32 [H, W, 1]
// in [0, 1], `label` int64.
Status write_idx_examples(const Dataset& data, uint32_t first, uint32_t count, const std::string& prefix,
                          uint32_t shards, Compression compression) {
  if (shards == 0 || shards > count)
    return Status(StatusCode::kInvalidArgument,
                  "--shards: " + std::to_string(shards) + " for " + std::to_string(count) + " records");
  auto writer = ShardedWriter::create(prefix, shards, count, compression);
  if (!writer.ok()) return writer.status();
  ExampleBuilder example;
  for (uint32_t i = first; i < first + count; ++i) {
    example.clear();
    example.add_floats("image", data.values.data() + std::size_t(i) * data.features, data.features);
    const int64_t label = data.labels[i];
    example.add_int64s("label", &label, 1);
    SYSTOLE_RETURN_IF_ERROR(writer->write(example.serialize()));
  }
  SYSTOLE_RETURN_IF_ERROR(writer->close());
  std::printf("wrote %u records (image float32 [%u, %u, 1], label int64) to %s ... (%u shard(s))\n", count,
              data.shape[0], data.shape[1], writer->names().front().c_str(), shards);
  return ok_status();
}

// CSV: a header row names the columns; every column becomes a feature.
struct CsvTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

Result<CsvTable> read_csv(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) return Status(StatusCode::kNotFound, path + ": cannot open: " + std::strerror(errno));
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> closer(file, std::fclose);
  struct State {
    CsvTable table;
    std::vector<std::string> row;
    uint64_t offset = 0;
    std::string error;
  } state;
  csv_parser parser;
  if (csv_init(&parser, CSV_STRICT | CSV_STRICT_FINI) != 0)
    return Status(StatusCode::kInternal, "libcsv: cannot initialise");
  std::unique_ptr<csv_parser, void (*)(csv_parser*)> freer(&parser, csv_free);
  auto on_field = [](void* text, std::size_t bytes, void* data) {
    static_cast<State*>(data)->row.emplace_back(static_cast<const char*>(text), bytes);
  };
  auto on_row = [](int, void* data) {
    State& s = *static_cast<State*>(data);
    if (s.table.header.empty()) {
      s.table.header = std::move(s.row);
    } else if (s.error.empty() && s.row.size() != s.table.header.size()) {
      s.error = "row " + std::to_string(s.table.rows.size() + 1) + " has " + std::to_string(s.row.size()) +
                " field(s), the header " + std::to_string(s.table.header.size());
    } else {
      s.table.rows.push_back(std::move(s.row));
    }
    s.row.clear();
  };
  char buffer[1 << 16];
  std::size_t got = 0;
  while ((got = std::fread(buffer, 1, sizeof buffer, file)) > 0) {
    const std::size_t used = csv_parse(&parser, buffer, got, on_field, on_row, &state);
    if (used != got)
      return Status(StatusCode::kInvalidArgument, path + ": byte " + std::to_string(state.offset + used) +
                                                      ": " + csv_strerror(csv_error(&parser)));
    state.offset += got;
    if (!state.error.empty()) return Status(StatusCode::kInvalidArgument, path + ": " + state.error);
  }
  if (csv_fini(&parser, on_field, on_row, &state) != 0)
    return Status(StatusCode::kInvalidArgument,
                  path + ": byte " + std::to_string(state.offset) + ": " + csv_strerror(csv_error(&parser)));
  if (!state.error.empty()) return Status(StatusCode::kInvalidArgument, path + ": " + state.error);
  if (state.table.header.empty()) return Status(StatusCode::kInvalidArgument, path + ": no header row");
  return std::move(state.table);
}

Status csv_to_tfrecord(const std::string& path, const std::string& prefix, uint32_t shards,
                       const std::vector<std::string>& int64_columns,
                       const std::vector<std::string>& float_columns, Compression compression) {
  auto table = read_csv(path);
  if (!table.ok()) return table.status();
  // A column is a feature of its name: two of one name would be one
  // feature, and a column typed twice would lose one type.
  std::map<std::string, FeatureType> types;
  for (std::size_t c = 0; c < table->header.size(); ++c)
    if (!types.emplace(table->header[c], FeatureType::kBytes).second)
      return Status(StatusCode::kInvalidArgument, path + ": header: column " + std::to_string(c + 1) +
                                                      " is named '" + table->header[c] +
                                                      "' as an earlier one (a feature per column)");
  std::map<std::string, const char*> typed_by;
  auto assign = [&](const std::vector<std::string>& names, FeatureType type, const char* flag) {
    for (const std::string& name : names) {
      if (!types.count(name))
        return Status(StatusCode::kInvalidArgument,
                      std::string(flag) + ": no column '" + name + "' in " + path + "'s header");
      const auto [earlier, fresh] = typed_by.emplace(name, flag);
      if (!fresh)
        return Status(StatusCode::kInvalidArgument,
                      std::string(flag) + ": column '" + name + "' is already typed by " + earlier->second);
      types[name] = type;
    }
    return ok_status();
  };
  SYSTOLE_RETURN_IF_ERROR(assign(int64_columns, FeatureType::kInt64, "--int64"));
  SYSTOLE_RETURN_IF_ERROR(assign(float_columns, FeatureType::kFloat, "--float"));
  const uint64_t count = table->rows.size();
  if (shards == 0 || shards > std::max<uint64_t>(count, 1))
    return Status(StatusCode::kInvalidArgument,
                  "--shards: " + std::to_string(shards) + " for " + std::to_string(count) + " rows");
  auto writer = ShardedWriter::create(prefix, shards, count, compression);
  if (!writer.ok()) return writer.status();
  ExampleBuilder example;
  for (uint64_t r = 0; r < count; ++r) {
    example.clear();
    for (std::size_t c = 0; c < table->header.size(); ++c) {
      const std::string& name = table->header[c];
      const std::string& text = table->rows[r][c];
      auto bad = [&](const char* what) {
        return Status(StatusCode::kInvalidArgument, path + ": row " + std::to_string(r + 1) + ", column '" +
                                                        name + "': '" + text + "' is not " + what);
      };
      char* end = nullptr;
      errno = 0;
      switch (types[name]) {
        case FeatureType::kBytes:
          example.add_bytes(name, {text});
          break;
        case FeatureType::kInt64: {
          const long long value = std::strtoll(text.c_str(), &end, 10);
          if (text.empty() || *end || errno) return bad("an int64");
          const int64_t v = value;
          example.add_int64s(name, &v, 1);
          break;
        }
        case FeatureType::kFloat: {
          // ERANGE also marks a subnormal result, which is the value written:
          // only an overflow (inf) or a value lost to zero is refused.
          const float value = std::strtof(text.c_str(), &end);
          if (text.empty() || *end || (errno == ERANGE && (std::isinf(value) || value == 0)))
            return bad("a float32");
          example.add_floats(name, &value, 1);
          break;
        }
      }
    }
    SYSTOLE_RETURN_IF_ERROR(writer->write(example.serialize()));
  }
  SYSTOLE_RETURN_IF_ERROR(writer->close());
  std::printf("wrote %llu records (", (unsigned long long)count);
  for (std::size_t c = 0; c < table->header.size(); ++c)
    std::printf("%s%s %s", c ? ", " : "", table->header[c].c_str(),
                feature_type_name(types[table->header[c]]));
  std::printf(") to %s ... (%u shard(s))\n", writer->names().front().c_str(), shards);
  return ok_status();
}

// A file's records: count, sizes, and the first `show` of them.
Status show(const std::string& path, uint32_t show_records, Compression compression) {
  auto reader = TFRecordReader::open(path, compression);
  if (!reader.ok()) return reader.status();
  std::string record;
  uint64_t records = 0, smallest = UINT64_MAX, largest = 0;
  for (;;) {
    const uint64_t at = reader->offset();
    auto more = reader->next(record);
    if (!more.ok()) return more.status();
    if (!*more) break;
    smallest = std::min<uint64_t>(smallest, record.size());
    largest = std::max<uint64_t>(largest, record.size());
    if (records < show_records) {
      auto text = describe_example(record);
      std::printf("record %llu at byte %llu (%zu bytes):\n%s", (unsigned long long)records,
                  (unsigned long long)at, record.size(),
                  text.ok() ? text->c_str()
                            : ("  (not a tf.train.Example: " + text.status().message() + ")\n").c_str());
    }
    ++records;
  }
  std::printf("%s: %llu records, %llu bytes, records of %llu..%llu bytes, every CRC correct\n", path.c_str(),
              (unsigned long long)records, (unsigned long long)reader->file_bytes(),
              (unsigned long long)(records ? smallest : 0), (unsigned long long)largest);
  return ok_status();
}

}  // namespace

int tool_main(int argc, char** argv) {
  CLI::App app{"Convert data to TFRecord files of tf.train.Example records, and inspect them."};
  app.require_subcommand(1);
  app.fallthrough();  // --compression may come after the subcommand
  std::string compression_text;
  app.add_option(
         "--compression", compression_text,
         "TFRecord files written as none (the default), gzip or zlib (TFRecordOptions' compression_type); "
         "read (show) as auto (the default: by their first bytes), none, gzip or zlib")
      ->check(CLI::IsMember({"none", "gzip", "zlib", "auto"}));
  std::string images, labels, out, csv, data_dir = kFashionMnistDir;
  uint32_t shards = 1, first = 0, count = 0, records = 3, validation = 5000;
  std::vector<std::string> int64_columns, float_columns, files;

  auto* from_idx = app.add_subcommand(
      "from-idx", "IDX images and labels -> image (float32 [H,W,1] in [0,1]), label (int64)");
  from_idx->add_option("--images", images, "IDX image file (.gz or plain)")->required();
  from_idx->add_option("--labels", labels, "IDX label file (.gz or plain)")->required();
  from_idx->add_option("--out", out, "output prefix: PREFIX-00000-of-0000N.tfrecord")->required();
  from_idx->add_option("--shards", shards, "files to write")->check(CLI::Range(1u, 100000u));
  from_idx->add_option("--first", first, "first example to convert");
  from_idx->add_option("--count", count, "examples to convert (0: to the end)");

  auto* fashion =
      app.add_subcommand("fashion-mnist",
                         "Fashion-MNIST as DIR/{train,validation,test}-*.tfrecord, split as accel_train "
                         "splits the IDX files");
  fashion->add_option("--out", out, "output directory")->required();
  fashion->add_option("--shards", shards, "training files to write")->check(CLI::Range(1u, 100000u));
  fashion->add_option("--data-dir", data_dir, "the IDX files");
  fashion->add_option("--validation-examples", validation, "held out from the end of the training set");

  auto* from_csv =
      app.add_subcommand("from-csv", "CSV with a header row -> one feature per column (string unless typed)");
  from_csv->add_option("--csv", csv, "the CSV file")->required();
  from_csv->add_option("--out", out, "output prefix")->required();
  from_csv->add_option("--shards", shards, "files to write")->check(CLI::Range(1u, 100000u));
  from_csv->add_option("--int64", int64_columns, "columns stored as int64")->delimiter(',');
  from_csv->add_option("--float", float_columns, "columns stored as float32")->delimiter(',');

  DebianPackagesOptions debian;
  bool no_apt_cache = false;
  auto* packages = app.add_subcommand("debian-packages",
                                      "package relationships (Depends, Pre-Depends, Recommends) as (package, "
                                      "dependency) interactions: DIR/{train,test}-*.tfrecord");
  packages->add_option("--out", debian.out, "output directory")->required();
  packages->add_option("--status", debian.files, "deb822 package files to read")->capture_default_str();
  packages->add_flag("--no-apt-cache", no_apt_cache, "do not read `apt-cache dumpavail`");
  packages->add_option("--test-fraction", debian.test_fraction, "share of edges held out")
      ->capture_default_str();
  packages->add_option("--negatives", debian.negatives, "sampled negatives per held-out (test) edge")
      ->check(CLI::Range(0u, 100u))
      ->capture_default_str();
  packages
      ->add_option("--train-negatives", debian.train_negatives,
                   "sampled negatives per training edge (0: positives only, for data.negatives)")
      ->check(CLI::Range(0u, 100u))
      ->capture_default_str();
  packages->add_option("--shards", debian.shards, "training files")
      ->check(CLI::Range(1u, 100000u))
      ->capture_default_str();
  packages->add_option("--seed", debian.seed, "the split's and the negatives' seed")->capture_default_str();

  DebianDescriptionsOptions descriptions;
  auto* describe =
      app.add_subcommand("debian-descriptions",
                         "package descriptions (text) and their sections (label), split by source package: "
                         "DIR/{train,validation,test}-*.tfrecord, DIR/sections.txt, DIR/dataset.json");
  describe->add_option("--out", descriptions.out, "output directory")->required();
  describe->add_option("--packages", descriptions.files,
                       "deb822 package lists to read instead of `apt-cache dumpavail`");
  describe->add_option("--classes", descriptions.classes, "the largest sections kept, `other` included")
      ->check(CLI::Range(2u, 256u))
      ->capture_default_str();
  describe->add_option("--validation-fraction", descriptions.validation_fraction, "share of source packages")
      ->capture_default_str();
  describe->add_option("--test-fraction", descriptions.test_fraction, "share of source packages")
      ->capture_default_str();
  describe->add_option("--shards", descriptions.shards, "training files")
      ->check(CLI::Range(1u, 100000u))
      ->capture_default_str();
  describe->add_option("--seed", descriptions.seed, "the split's seed")->capture_default_str();

  FortunesOptions fortune;
  auto* fortunes = app.add_subcommand(
      "fortunes",
      "next-character windows of Debian's fortunes (a language model's data): "
      "DIR/{train,validation,test}-*.tfrecord (context, next), DIR/vocabulary.txt, DIR/dataset.json");
  fortunes->add_option("--out", fortune.out, "output directory")->required();
  fortunes->add_option("--files", fortune.files,
                       "files in fortune's format instead of /usr/share/games/fortunes");
  fortunes->add_option("--length", fortune.length, "characters per window")
      ->check(CLI::Range(1u, 4096u))
      ->capture_default_str();
  fortunes->add_option("--vocabulary-size", fortune.vocabulary_size, "characters with an id of their own")
      ->check(CLI::Range(1u, 65536u))
      ->capture_default_str();
  fortunes->add_option("--validation-fraction", fortune.validation_fraction, "share of fortunes")
      ->capture_default_str();
  fortunes->add_option("--test-fraction", fortune.test_fraction, "share of fortunes")->capture_default_str();
  fortunes->add_option("--shards", fortune.shards, "training files")
      ->check(CLI::Range(1u, 100000u))
      ->capture_default_str();
  fortunes->add_option("--seed", fortune.seed, "the split's and the shuffle's seed")->capture_default_str();

  auto* show_command =
      app.add_subcommand("show", "check every record's CRC; print a summary and the first records");
  show_command->add_option("files", files, "TFRecord files")->required();
  show_command->add_option("--records", records, "records to print per file");
  std::vector<std::string> event_files;
  auto* events_command =
      app.add_subcommand("events", "check a TensorBoard event file; print its scalars (step tag value)");
  events_command->add_option("files", event_files, "events.out.tfevents.* files")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }

  const Compression reading = *parse_compression(compression_text.empty() ? "auto" : compression_text);
  const Compression writing = *parse_compression(compression_text.empty() ? "none" : compression_text);
  if (writing == Compression::kAuto && !show_command->parsed()) {
    std::fprintf(stderr, "accel_data: --compression auto is for reading; write none, gzip or zlib\n");
    return 2;
  }
  Status status;
  if (from_idx->parsed()) {
    auto data = read_idx(images, labels, 0);
    if (!data.ok())
      status = data.status();
    else if (first >= data->examples)
      status = Status(StatusCode::kInvalidArgument, "--first: past the last example");
    else {
      const uint32_t n = count ? count : data->examples - first;
      status = n > data->examples - first
                   ? Status(StatusCode::kInvalidArgument, "--count: past the last example")
                   : write_idx_examples(*data, first, n, out, shards, writing);
    }
  } else if (fashion->parsed()) {
    auto train = load_fashion_mnist(data_dir, true);
    auto test =
        train.ok() ? load_fashion_mnist(data_dir, false, train->classes) : Result<Dataset>(train.status());
    if (!test.ok())
      status = test.status();
    else if (validation >= train->examples)
      status = Status(StatusCode::kInvalidArgument, "--validation-examples: leaves no training examples");
    else if (::mkdir(out.c_str(), 0755) != 0 && errno != EEXIST)
      status =
          Status(StatusCode::kUnavailable, out + ": cannot create the directory: " + std::strerror(errno));
    else {
      const uint32_t kept = train->examples - validation;
      status = write_idx_examples(*train, 0, kept, out + "/train", shards, writing);
      if (status.ok() && validation > 0)
        status = write_idx_examples(*train, kept, validation, out + "/validation", 1, writing);
      if (status.ok()) status = write_idx_examples(*test, 0, test->examples, out + "/test", 1, writing);
    }
  } else if (packages->parsed()) {
    debian.apt_cache = !no_apt_cache;
    debian.compression = writing;
    status = write_debian_packages(debian);
  } else if (fortunes->parsed()) {
    fortune.compression = writing;
    status = write_fortunes(fortune);
  } else if (describe->parsed()) {
    descriptions.compression = writing;
    status = write_debian_descriptions(descriptions);
  } else if (from_csv->parsed()) {
    status = csv_to_tfrecord(csv, out, shards, int64_columns, float_columns, writing);
  } else if (events_command->parsed()) {
    for (const std::string& file : event_files) {
      auto contents = read_event_file(file);
      if (!contents.ok()) {
        status = contents.status();
        break;
      }
      for (const ScalarEvent& scalar : contents->scalars) {
        char value[32];  // the shortest text that reads back as the value's type
        char* end = scalar.single ? std::to_chars(value, value + sizeof value - 1, float(scalar.value)).ptr
                                  : std::to_chars(value, value + sizeof value - 1, scalar.value).ptr;
        *end = '\0';
        std::printf("%lld %s %s\n", (long long)scalar.step, scalar.tag.c_str(), value);
      }
      std::string others;
      for (const auto& [plugin, count] : contents->other)
        others += (others.empty() ? "" : ", ") + std::to_string(count) + " " + plugin;
      std::printf("%s: %zu scalars%s, every CRC correct\n", file.c_str(), contents->scalars.size(),
                  others.empty() ? "" : ("; other summaries, not printed: " + others).c_str());
    }
  } else {
    for (const std::string& file : files) {
      status = show(file, records, reading);
      if (!status.ok()) break;
    }
  }
  if (!status.ok()) {
    std::fprintf(stderr, "accel_data: %s\n", status.to_string().c_str());
    return 2;
  }
  return 0;
}

int main(int argc, char** argv) { return systole::tools::guarded_main("accel_data", tool_main, argc, argv); }
