// SPDX-License-Identifier: Apache-2.0
// Writes a small synthetic Fashion-MNIST-shaped data set (gzip IDX files,
// 28x28 images, 10 classes, labels learnable from the pixels) for the
// accel_train end-to-end test: make_idx DIR TRAIN_EXAMPLES TEST_EXAMPLES.
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace {

void put32(std::vector<uint8_t>& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(uint8_t(v >> shift));
}

bool write(const std::string& path, const std::vector<uint8_t>& bytes) {
  gzFile file = gzopen(path.c_str(), "wb");
  if (!file) return false;
  const bool ok = gzwrite(file, bytes.data(), unsigned(bytes.size())) == int(bytes.size());
  return gzclose(file) == Z_OK && ok;
}

bool split(const std::string& prefix, uint32_t examples, std::mt19937& rng) {
  std::vector<uint8_t> images, labels;
  put32(images, 0x803);
  put32(images, examples);
  put32(images, 28);
  put32(images, 28);
  put32(labels, 0x801);
  put32(labels, examples);
  for (uint32_t e = 0; e < examples; ++e) {
    const uint32_t label = rng() % 10;
    labels.push_back(uint8_t(label));
    // Class c lights rows [2c, 2c + 5) brighter, plus noise.
    for (uint32_t p = 0; p < 784; ++p) {
      const uint32_t row = p / 28;
      const bool lit = row >= 2 * label && row < 2 * label + 5;
      images.push_back(uint8_t((lit ? 150 : 20) + rng() % 80));
    }
  }
  return write(prefix + "-images-idx3-ubyte.gz", images) && write(prefix + "-labels-idx1-ubyte.gz", labels);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: make_idx DIR TRAIN_EXAMPLES TEST_EXAMPLES\n");
    return 2;
  }
  std::mt19937 rng(42);
  const std::string dir = argv[1];
  if (!split(dir + "/train", uint32_t(std::atoi(argv[2])), rng) ||
      !split(dir + "/t10k", uint32_t(std::atoi(argv[3])), rng)) {
    std::fprintf(stderr, "make_idx: cannot write into %s\n", dir.c_str());
    return 1;
  }
  return 0;
}
