// SPDX-License-Identifier: Apache-2.0
// TFRecord files of tf.train.Example records: the reader reads every frame
// or names the record and byte offset where the file goes wrong; the frame
// counter agrees with it; every record is parsed against a schema of each
// feature type and rendered, each ending in a row or a named error.
#include "fuzz_input.h"
#include "systole/tf_example.h"
#include "systole/tfrecord.h"

namespace {

const systole::ExampleSchema& schema() {
  static const systole::ExampleSchema schema = [] {
    using systole::FeatureType;
    std::vector<systole::FeatureSpec> features(3);
    features[0].name = "x";
    features[0].type = FeatureType::kFloat;
    features[1].name = "label";
    features[1].type = FeatureType::kInt64;
    features[1].has_default = true;
    features[1].default_numbers = {0};
    features[2].name = "id";
    features[2].type = FeatureType::kBytes;
    features[2].hash_buckets = 16;
    auto created = systole::ExampleSchema::create(features);
    if (!created.ok()) systole::fuzz::fail("the schema: " + created.status().to_string());
    return std::move(created).value();
  }();
  return schema;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace systole;
  const std::string path = fuzz::write_file("data.tfrecord", {reinterpret_cast<const char*>(data), size});
  auto reader = TFRecordReader::open(path);
  if (!reader.ok()) fuzz::fail("a regular file did not open: " + reader.status().to_string());
  std::string record;
  std::vector<float> row(schema().row_size());
  bool frames_intact = true;
  for (;;) {
    const uint64_t offset = reader->offset(), index = reader->records_read();
    Result<bool> more = reader->next(record);
    if (!more.ok()) {
      const std::string& message = more.status().message();
      if (message.find("data.tfrecord") == std::string::npos ||
          message.find(std::to_string(offset)) == std::string::npos)
        fuzz::fail("the error does not name the file and offset " + std::to_string(offset) + ": " + message);
      if (reader->records_read() == index) {  // a broken frame: the reader is at the end
        frames_intact = false;
        break;
      }
      continue;  // a record whose data is damaged, its frame intact
    }
    if (!*more) break;
    if (record.size() > size) fuzz::fail("a record longer than the file");
    (void)schema().parse(record, row.data());
    (void)describe_example(record);
  }
  Result<uint64_t> counted = count_tfrecords(path);
  if (frames_intact && (!counted.ok() || *counted != reader->records_read()))
    fuzz::fail("count_tfrecords disagrees with the reader");
  return 0;
}
