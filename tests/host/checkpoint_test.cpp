// SPDX-License-Identifier: Apache-2.0
// safetensors checkpoints (label unit): round trip, the exact byte layout,
// atomic writes, every kind of corrupt file, and a tensor the store keeps
// in another order than torch's leaving and coming back in torch's.
#include "systole/checkpoint.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/temp_dir_test.h"

namespace systole {
namespace {

class Checkpoints : public testing::TempDirTest {
 protected:
  void write_raw(const std::string& file, const std::string& header, std::size_t data_bytes) {
    std::ofstream out(file, std::ios::binary);
    uint64_t length = header.size();
    out.write(reinterpret_cast<const char*>(&length), 8);
    out << header << std::string(data_bytes, '\0');
  }
};

TEST_F(Checkpoints, RoundTripAndLayout) {
  Checkpoint checkpoint;
  checkpoint.tensors = {{"layers.0.weight", {2, 3}, {1, 2, 3, 4, 5, 6}}, {"layers.0.bias", {2}, {-1, 0.5f}}};
  checkpoint.metadata = {{"epochs_done", "3"}};
  ASSERT_TRUE(write_safetensors(path("a.safetensors"), checkpoint).ok());
  for (const auto& entry : std::filesystem::directory_iterator(path("")))
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos) << entry.path();

  std::ifstream in(path("a.safetensors"), std::ios::binary);
  uint64_t length = 0;
  in.read(reinterpret_cast<char*>(&length), 8);
  std::string header(length, '\0');
  in.read(header.data(), std::streamsize(length));
  EXPECT_EQ(length % 8, 0u) << "data starts 8-byte aligned";
  EXPECT_NE(header.find(R"("layers.0.weight":{"data_offsets":[0,24],"dtype":"F32","shape":[2,3]})"),
            std::string::npos)
      << header;
  EXPECT_EQ(std::filesystem::file_size(path("a.safetensors")), 8 + length + 32);

  auto back = read_safetensors(path("a.safetensors"));
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  ASSERT_NE(back->find("layers.0.bias"), nullptr);
  EXPECT_EQ(back->find("layers.0.bias")->values, (std::vector<float>{-1, 0.5f}));
  EXPECT_EQ(back->find("layers.0.weight")->shape, (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(back->metadata.at("epochs_done"), "3");
}

TEST_F(Checkpoints, CorruptFilesAreRejectedWithTheReason) {
  auto expect = [&](const std::string& header, std::size_t data, const std::string& text) {
    write_raw(path("bad.safetensors"), header, data);
    auto result = read_safetensors(path("bad.safetensors"));
    ASSERT_FALSE(result.ok()) << header;
    EXPECT_NE(result.status().message().find(text), std::string::npos) << result.status().message();
  };
  expect("{not json", 0, "header is not JSON");
  expect(R"({"w":{"dtype":"F16","shape":[1],"data_offsets":[0,2]}})", 2, "tensor 'w': dtype \"F16\"");
  expect(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 8, "shape holds 2 elements");
  expect(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8, "outside the file's 8 data bytes");
  expect(
      R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"v":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
      8, "tensors overlap");
  expect(R"({"w":{"dtype":"F32"}})", 0, "needs dtype, shape and data_offsets");
  // Numbers that are not integers are refused naming the tensor and quoting
  // them, never rounded to one (784.0 and 784.5 would both read as 784).
  expect(R"({"w":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})", 8,
         "tensor 'w': shape [2.0] is not a list of non-negative integers");
  expect(R"({"w":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}})", 8,
         "tensor 'w': shape [2.5] is not a list of non-negative integers");
  expect(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8,
         "tensor 'w': shape [-2] is not a list of non-negative integers");
  expect(R"({"w":{"dtype":"F32","shape":2,"data_offsets":[0,8]}})", 8,
         "tensor 'w': shape 2 is not a list of non-negative integers");
  expect(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8.0]}})", 8,
         "tensor 'w': data_offsets [0,8.0] is not a list of non-negative integers");
  // A shape whose element count wraps around 2^64 to the bytes present.
  expect(R"({"w":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,0]}})", 0,
         "holds more than the file's 0 data bytes");
  expect(
      R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"__metadata__":{"data_crc32c":"00000000"}})",
      4, "the data section's CRC-32C is");
  {
    std::ofstream out(path("bad.safetensors"), std::ios::binary);
    const uint64_t length = 1000;
    out.write(reinterpret_cast<const char*>(&length), 8);
  }
  auto result = read_safetensors(path("bad.safetensors"));
  EXPECT_NE(result.status().message().find("runs past the end"), std::string::npos);
  EXPECT_EQ(read_safetensors(path("none")).status().code(), StatusCode::kNotFound);
}

TEST_F(Checkpoints, EveryFlippedDataBitIsCaughtByTheChecksum) {
  Checkpoint checkpoint;
  checkpoint.tensors = {{"w", {3}, {1.5f, -2.0f, 0.25f}}, {"n", {}, {7}, /*int64=*/true}};
  ASSERT_TRUE(write_safetensors(path("c.safetensors"), checkpoint).ok());
  std::string bytes;
  {
    std::ifstream in(path("c.safetensors"), std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  auto back = read_safetensors(path("c.safetensors"));
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->metadata.count(kDataChecksumKey), 1u);
  const std::size_t data_start = bytes.size() - 3 * 4 - 8;
  for (std::size_t at = data_start; at < bytes.size(); ++at)
    for (int bit = 0; bit < 8; ++bit) {
      std::string damaged = bytes;
      damaged[at] = char(damaged[at] ^ (1 << bit));
      {
        std::ofstream out(path("d.safetensors"), std::ios::binary);
        out.write(damaged.data(), std::streamsize(damaged.size()));
      }
      auto result = read_safetensors(path("d.safetensors"));
      ASSERT_FALSE(result.ok()) << "byte " << at << " bit " << bit;
      EXPECT_NE(result.status().message().find("the file is damaged"), std::string::npos)
          << result.status().message();
    }
}

TEST_F(Checkpoints, CountsTravelAsInt64) {
  // BatchNorm's num_batches_tracked is an int64 scalar in torch.
  Checkpoint checkpoint;
  checkpoint.tensors = {{"1.num_batches_tracked", {}, {429}, /*int64=*/true}, {"1.weight", {1}, {2}}};
  ASSERT_TRUE(write_safetensors(path("c.safetensors"), checkpoint).ok());
  std::ifstream in(path("c.safetensors"), std::ios::binary);
  uint64_t length = 0;
  in.read(reinterpret_cast<char*>(&length), 8);
  std::string header(length, '\0');
  in.read(header.data(), std::streamsize(length));
  EXPECT_NE(header.find(R"("1.num_batches_tracked":{"data_offsets":[0,8],"dtype":"I64","shape":[]})"),
            std::string::npos)
      << header;
  int64_t count = 0;
  in.read(reinterpret_cast<char*>(&count), 8);
  EXPECT_EQ(count, 429);
  auto back = read_safetensors(path("c.safetensors"));
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_TRUE(back->find("1.num_batches_tracked")->int64);
  EXPECT_EQ(back->find("1.num_batches_tracked")->values, std::vector<float>{429});
  write_raw(path("negative.safetensors"), R"({"n":{"dtype":"I64","shape":[],"data_offsets":[0,8]}})", 0);
  {
    std::ofstream out(path("negative.safetensors"), std::ios::binary | std::ios::app);
    const int64_t negative = -1;
    out.write(reinterpret_cast<const char*>(&negative), 8);
  }
  auto bad = read_safetensors(path("negative.safetensors"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("tensor 'n': count -1 out of range"), std::string::npos)
      << bad.status().message();
}

// A [2, 3, 4, 5] tensor kept as [2][4][5][3] (Conv2D's order) beside one
// kept in torch's order: model_tensors gives torch's layout, and
// read_model_tensors puts a file's values back in the store's.
TEST_F(Checkpoints, ATensorKeptInAnotherOrderTravelsInTorchs) {
  ParameterStore store;
  const std::size_t conv = store.declare("0.weight", {2, 3, 4, 5}, Region::kTrainable, false, {0, 2, 3, 1});
  const std::size_t bias = store.declare("0.bias", {2}, Region::kTrainable, false, {0});
  ASSERT_EQ(store.entries()[conv].axes, (std::vector<uint32_t>{0, 2, 3, 1}));
  EXPECT_TRUE(store.entries()[bias].axes.empty()) << "the identity is torch's own order";
  for (std::size_t i = 0; i < store.trainable().size(); ++i) store.trainable()[i] = float(i);
  const Checkpoint checkpoint = model_tensors(store, nullptr);
  const Tensor& weight = *checkpoint.find("0.weight");
  for (uint32_t f = 0; f < 2; ++f)
    for (uint32_t c = 0; c < 3; ++c)
      for (uint32_t y = 0; y < 4; ++y)
        for (uint32_t x = 0; x < 5; ++x)
          ASSERT_EQ(weight.values[((f * 3 + c) * 4 + y) * 5 + x],
                    store.values(conv)[((f * 4 + y) * 5 + x) * 3 + c])
              << "torch's [" << f << "][" << c << "][" << y << "][" << x << "]";
  EXPECT_EQ(checkpoint.find("0.bias")->values, (std::vector<float>{120, 121}));

  ModelValues values;
  ASSERT_TRUE(read_model_tensors(checkpoint, "c.safetensors", store, {}, values).ok());
  EXPECT_EQ(values.trainable, store.trainable());
}

TEST_F(Checkpoints, AFailedWriteLeavesNothingBehind) {
  Checkpoint checkpoint;
  checkpoint.tensors = {{"w", {1}, {1}}};
  const Status status = write_safetensors(path("no/such/dir/c.safetensors"), checkpoint);
  EXPECT_FALSE(status.ok());
  EXPECT_TRUE(std::filesystem::is_empty(dir_));
}

}  // namespace
}  // namespace systole
