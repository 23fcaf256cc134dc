// SPDX-License-Identifier: Apache-2.0
// A test fixture with a directory of its own: created fresh for each test
// (named after the process and the test) and removed with everything in it
// afterwards.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace systole::testing {

class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() /
        ("systole_" +
         std::string(::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name()) + "_" +
         std::to_string(::getpid()) + "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // `name` inside the directory.
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::filesystem::path dir_;
};

}  // namespace systole::testing
