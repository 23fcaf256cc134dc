// SPDX-License-Identifier: Apache-2.0
// The .npy reader: arrays as NumPy writes them (C and Fortran order, format
// versions 1 to 3, written by xtensor too), and every malformed header or
// size refused with the file named, before anything is allocated.
#include "npy_matrix.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstring>
#include <fstream>
#include <xtensor/xadapt.hpp>
#include <xtensor/xnpy.hpp>

#include "common/temp_dir_test.h"

namespace systole::tools {
namespace {

class Npy : public testing::TempDirTest {
 protected:
  // A .npy file of `header` (padded as NumPy pads it) and `data`.
  std::string write(const std::string& name, std::string header, const std::string& data, int major = 1) {
    const std::size_t preamble = major == 1 ? 10 : 12;
    while ((preamble + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    std::string bytes = std::string("\x93NUMPY", 6) + char(major) + '\0';
    for (int i = 0; i < (major == 1 ? 2 : 4); ++i) bytes += char((header.size() >> (8 * i)) & 0xFF);
    return raw(name, bytes + header + data);
  }
  std::string raw(const std::string& name, const std::string& bytes) {
    std::ofstream(path(name), std::ios::binary) << bytes;
    return path(name);
  }
  static std::string floats(std::initializer_list<float> values) {
    std::string bytes(values.size() * 4, '\0');
    std::memcpy(bytes.data(), values.begin(), bytes.size());  // x86: little-endian
    return bytes;
  }
  // The error reading `file`, which must name it.
  static std::string error(const std::string& file) {
    auto array = read_npy(file);
    EXPECT_FALSE(array.ok()) << file;
    if (array.ok()) return "";
    EXPECT_NE(array.status().message().find(file), std::string::npos) << array.status().message();
    return array.status().message();
  }
};

TEST_F(Npy, ReadsWhatXtensorWrites) {
  const std::vector<float> values = {1.5f, -2.0f, 0.0f, 3.25f, 7.0f, -0.5f};
  raw("c.npy", xt::dump_npy(xt::adapt(values, std::vector<std::size_t>{3, 2})));
  auto matrix = read_npy_matrix(path("c.npy"));
  ASSERT_TRUE(matrix.ok()) << matrix.status().to_string();
  EXPECT_EQ(matrix->rows, 3u);
  EXPECT_EQ(matrix->cols, 2u);
  EXPECT_EQ(matrix->values, values);
}

TEST_F(Npy, FortranOrderIsReadInRowMajorOrder) {
  // np.save of np.asfortranarray(np.arange(12).reshape(2, 3, 2)) stores
  // 0 6 2 8 4 10 1 7 3 9 5 11 (NumPy 1.24 read these bytes back as arange).
  const std::string file = write("f.npy", "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3, 2), }",
                                 floats({0, 6, 2, 8, 4, 10, 1, 7, 3, 9, 5, 11}), 2);
  auto array = read_npy(file);
  ASSERT_TRUE(array.ok()) << array.status().to_string();
  EXPECT_EQ(array->shape, (std::vector<uint64_t>{2, 3, 2}));
  for (int i = 0; i < 12; ++i) EXPECT_EQ(array->values[i], float(i)) << "element " << i;
}

TEST_F(Npy, MalformedFilesAreRefusedNamingWhatIsWrong) {
  const std::string ok_header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }";
  const std::string four = floats({1, 2, 3, 4});
  EXPECT_NE(error(raw("short", "\x93NUM")).find("no .npy magic"), std::string::npos);
  EXPECT_NE(error(write("v4", ok_header, four, 4)).find("format version 4.0"), std::string::npos);
  // A version-2 header length of 2^32-1: refused, not allocated.
  EXPECT_NE(error(raw("long", std::string("\x93NUMPY\x02\x00\xff\xff\xff\xff", 12))).find("exceeds 10000"),
            std::string::npos);
  EXPECT_NE(error(raw("cut", std::string("\x93NUMPY\x01\x00\x40\x00{'descr'", 18))).find("truncated"),
            std::string::npos);
  // 2^32 x 2^32 floats in a 16-byte data section.
  EXPECT_NE(
      error(write("huge", "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }",
                  four))
          .find("needs more floats"),
      std::string::npos);
  EXPECT_NE(
      error(write("18digits", "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999, ), }",
                  four))
          .find("expected a non-negative integer"),
      std::string::npos);
  EXPECT_NE(error(write("f8", "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }", four + four))
                .find("dtype <f8"),
            std::string::npos);
  EXPECT_NE(error(write("big", "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 2), }", four))
                .find("dtype >f4"),
            std::string::npos);
  EXPECT_NE(error(write("nokey", "{'descr': '<f4', 'shape': (2, 2), }", four)).find("needs 'descr'"),
            std::string::npos);
  EXPECT_NE(error(write("twice",
                        "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", four))
                .find("appears twice"),
            std::string::npos);
  EXPECT_NE(
      error(write("unknown", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), 'x': 1, }", four))
          .find("expected a string"),
      std::string::npos);
  EXPECT_NE(error(write("open", "{'descr': '<f4", four)).find("unterminated"), std::string::npos);
  EXPECT_NE(error(write("zero", "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 2), }", ""))
                .find("no elements"),
            std::string::npos);
  EXPECT_NE(error(write("scalar", "{'descr': '<f4', 'fortran_order': False, 'shape': (), }", floats({1})))
                .find("at least one dimension"),
            std::string::npos);
  EXPECT_NE(error(write("fewer", ok_header, floats({1, 2, 3}))).find("truncated"), std::string::npos);
  EXPECT_NE(error(write("more", ok_header, four + "x")).find("1 bytes after the data"), std::string::npos);
  auto three_d =
      read_npy_matrix(write("3d", "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2, 2), }", four));
  ASSERT_FALSE(three_d.ok());
  EXPECT_NE(three_d.status().message().find("has 3 dimension(s)"), std::string::npos);
}

TEST_F(Npy, OnlyRegularFilesAreRead) {
  EXPECT_NE(error(dir_.string()).find("not a regular file"), std::string::npos);
  ASSERT_EQ(mkfifo(path("fifo").c_str(), 0600), 0);
  EXPECT_NE(error(path("fifo")).find("not a regular file"), std::string::npos) << "and no hang on open";
  EXPECT_EQ(read_npy(path("missing")).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace systole::tools
