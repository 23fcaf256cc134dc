// SPDX-License-Identifier: Apache-2.0
// TFRecord files for tests: a fixture with a directory of its own that
// writes files of records, and whole-file reads and writes (to damage a
// file byte by byte).
#pragma once

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "common/temp_dir_test.h"
#include "systole/tfrecord.h"

namespace systole::testing {

inline std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_all(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

class TFRecordFileTest : public TempDirTest {
 protected:
  // A file of `records`, returning its path.
  std::string write_file(const std::string& name, const std::vector<std::string>& records) {
    auto writer = TFRecordWriter::create(path(name));
    EXPECT_TRUE(writer.ok()) << writer.status().message();
    for (const std::string& record : records) EXPECT_TRUE(writer->write(record).ok());
    EXPECT_TRUE(writer->close().ok());
    return path(name);
  }
};

}  // namespace systole::testing
