// SPDX-License-Identifier: Apache-2.0
// The input pipeline alone: records/s for read + CRC + parse (+ hash +
// sampled negatives) + shuffle + batch, five epochs per thread count, and
// the examples/s (records and their negatives) that training would
// consume, of the collaborative-filtering data (accel_data
// debian-packages: `cf`) or of images (accel_data fashion-mnist:
// `images`, 28 x 28 float32 and an int64 label).
//   input_bench cf|images 'DIR/train-*.tfrecord' BATCH NEGATIVES THREADS...
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "systole/record_pipeline.h"
#include "systole/tfrecord.h"

int main(int argc, char** argv) {
  using namespace systole;
  if (argc < 6 || (std::string(argv[1]) != "cf" && std::string(argv[1]) != "images")) {
    std::fprintf(stderr, "usage: input_bench cf|images PATTERN BATCH NEGATIVES THREADS...\n");
    return 2;
  }
  const bool images = std::string(argv[1]) == "images";
  auto files = match_files({argv[2]});
  if (!files.ok()) {
    std::fprintf(stderr, "input_bench: %s\n", files.status().message().c_str());
    return 2;
  }
  std::vector<FeatureSpec> specs;
  if (images) {
    specs.resize(2);
    specs[0].name = "image";
    specs[0].type = FeatureType::kFloat;
    specs[0].shape = {28, 28, 1};
  } else {
    specs.resize(3);
    specs[0].name = "package";
    specs[1].name = "dependency";
    for (int i = 0; i < 2; ++i) {
      specs[i].type = FeatureType::kBytes;
      specs[i].hash_buckets = 131072;
    }
  }
  specs.back().name = "label";
  specs.back().type = FeatureType::kInt64;
  const ExampleSchema schema = ExampleSchema::create(specs).value();
  const ExampleColumns columns =
      images ? ExampleColumns{{"image"}, "label", 10} : ExampleColumns{{"package", "dependency"}, "label", 2};
  for (int a = 5; a < argc; ++a) {
    RecordPipelineOptions options;
    options.files = *files;
    options.batch_size = uint32_t(std::atoi(argv[3]));
    options.threads = uint32_t(std::atoi(argv[a]));
    options.cycle_length = 4;
    options.shuffle_buffer = images ? 10000 : 20000;  // configs/fashion_mnist_tfrecord.yaml, cf_debian.yaml
    options.prefetch = images ? 2 : 4;
    options.negatives = uint32_t(std::atoi(argv[4]));
    if (options.negatives > 0) options.negative_feature = "dependency";
    auto pipeline = RecordPipeline::create(schema, columns, options);
    if (!pipeline.ok()) {
      std::fprintf(stderr, "input_bench: %s\n", pipeline.status().message().c_str());
      return 2;
    }
    const auto start = std::chrono::steady_clock::now();
    Batch batch;
    uint64_t examples = 0;
    for (uint32_t epoch = 0; epoch < 5; ++epoch) {
      (*pipeline)->start_epoch(epoch);
      for (;;) {
        auto more = (*pipeline)->next(batch);
        if (!more.ok()) {
          std::fprintf(stderr, "input_bench: %s\n", more.status().message().c_str());
          return 2;
        }
        if (!*more) break;
        examples += batch.size;
      }
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double records = double(examples) / double(1 + options.negatives);
    std::printf("threads %s: %.0f records (%llu examples) in %.2f s, %.0f records/s, %.0f examples/s\n",
                argv[a], records, (unsigned long long)examples, seconds, records / seconds,
                double(examples) / seconds);
  }
  return 0;
}
