// The input pipeline alone: records/s for read + CRC + parse + hash +
// shuffle + batch of the collaborative-filtering data
// (accel_data debian-packages), one epoch per thread count.
//   input_bench 'DIR/train-*.tfrecord' BATCH THREADS...
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "systole/record_pipeline.h"
#include "systole/tfrecord.h"

int main(int argc, char** argv) {
  using namespace systole;
  if (argc < 4) {
    std::fprintf(stderr, "usage: input_bench PATTERN BATCH THREADS...\n");
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
  for (int a = 3; a < argc; ++a) {
    RecordPipelineOptions options;
    options.files = *files;
    options.batch_size = uint32_t(std::atoi(argv[2]));
    options.threads = uint32_t(std::atoi(argv[a]));
    options.cycle_length = 4;
    options.shuffle_buffer = 20000;
    options.prefetch = 4;
    auto pipeline = RecordPipeline::create(schema, columns, options);
    if (!pipeline.ok()) {
      std::fprintf(stderr, "input_bench: %s\n", pipeline.status().message().c_str());
      return 2;
    }
    const auto start = std::chrono::steady_clock::now();
    (*pipeline)->start_epoch(0);
    Batch batch;
    uint64_t records = 0;
    for (;;) {
      auto more = (*pipeline)->next(batch);
      if (!more.ok()) {
        std::fprintf(stderr, "input_bench: %s\n", more.status().message().c_str());
        return 2;
      }
      if (!*more) break;
      records += batch.size;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("threads %s: %llu records in %.2f s, %.0f records/s\n", argv[a], (unsigned long long)records,
                seconds, double(records) / seconds);
  }
  return 0;
}
