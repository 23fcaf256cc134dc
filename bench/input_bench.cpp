// SPDX-License-Identifier: Apache-2.0
// The input pipeline alone: records/s for read + CRC + parse + hash +
// sampled negatives + shuffle + batch of the collaborative-filtering data
// (accel_data debian-packages), five epochs per thread count, and the
// examples/s (records and their negatives) that training would consume.
//   input_bench 'DIR/train-*.tfrecord' BATCH NEGATIVES THREADS...
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "systole/record_pipeline.h"
#include "systole/tfrecord.h"

int main(int argc, char** argv) {
  using namespace systole;
  if (argc < 5) {
    std::fprintf(stderr, "usage: input_bench PATTERN BATCH NEGATIVES THREADS...\n");
    return 2;
  }
  auto files = match_files({argv[1]});
  if (!files.ok()) {
    std::fprintf(stderr, "input_bench: %s\n", files.status().message().c_str());
    return 2;
  }
  std::vector<FeatureSpec> specs(3);
  specs[0].name = "package";
  specs[1].name = "dependency";
  for (int i = 0; i < 2; ++i) {
    specs[i].type = FeatureType::kBytes;
    specs[i].hash_buckets = 131072;
  }
  specs[2].name = "label";
  specs[2].type = FeatureType::kInt64;
  const ExampleSchema schema = ExampleSchema::create(specs).value();
  const ExampleColumns columns{{"package", "dependency"}, "label", 2};
  for (int a = 4; a < argc; ++a) {
    RecordPipelineOptions options;
    options.files = *files;
    options.batch_size = uint32_t(std::atoi(argv[2]));
    options.threads = uint32_t(std::atoi(argv[a]));
    options.cycle_length = 4;
    options.shuffle_buffer = 20000;
    options.prefetch = 4;
    options.negatives = uint32_t(std::atoi(argv[3]));
    options.negative_feature = "dependency";
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
