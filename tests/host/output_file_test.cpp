// SPDX-License-Identifier: Apache-2.0
// Fault-injection rules, and what an OutputFile leaves when its fsync or
// rename fails or the process dies between its steps: the destination as
// it was, and no temporary file once the directory's next lock is taken.
#include "systole/output_file.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/temp_dir_test.h"
#include "systole/fault_points.h"

namespace systole {
namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

std::vector<std::string> names_in(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

class FaultPoints : public ::testing::Test {
 protected:
  void TearDown() override { ASSERT_TRUE(arm_faults("").ok()); }
};

TEST_F(FaultPoints, MalformedRulesAreRefusedQuotedAndChangeNothing) {
  ASSERT_TRUE(arm_faults("train.step@2=error").ok());
  const std::pair<const char*, const char*> bad[] = {
      {"train.stpe=kill", "'train.stpe=kill': no fault point 'train.stpe' (the points: output.fsync, "},
      {"train.step=crash", "'train.step=crash': the action 'crash' is neither kill nor error"},
      {"train.step", "'train.step': a rule is POINT[:SUBJECT][@N]=ACTION"},
      {"train.step@0=kill", "'@0' is not a passage number from 1 to 2^64-1"},
      {"train.step@-1=kill", "'@-1' is not a passage number"},
      {"train.step@18446744073709551616=kill", "'@18446744073709551616' is not a passage number"},
      {"train.step@2x=kill", "'@2x' is not a passage number"},
      {"output.fsync:=error", "an empty subject after ':'"},
      {"output.renamed=error", "output.renamed takes the action kill only"},
      {"train.step=kill,,", "'': a rule is POINT"},
  };
  for (const auto& [spec, message] : bad) {
    const Status status = arm_faults(spec, "SYSTOLE_FAULTS");
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << spec;
    EXPECT_NE(status.message().find(message), std::string::npos) << status.message();
    EXPECT_EQ(status.message().rfind("SYSTOLE_FAULTS: '", 0), 0u) << status.message();
  }
  // The rule armed before the refused specs still fires on its passage.
  EXPECT_TRUE(fault_point(FaultPoint::kTrainStep).ok());
  EXPECT_FALSE(fault_point(FaultPoint::kTrainStep).ok());
}

TEST_F(FaultPoints, ARuleFiresOnceOnItsNthMatchingPassage) {
  ASSERT_TRUE(arm_faults("train.step@3=error,output.fsync:a.bin@2=error").ok());
  for (int step = 1; step <= 5; ++step) {
    const Status status = fault_point(FaultPoint::kTrainStep);
    EXPECT_EQ(status.ok(), step != 3) << "step " << step;
    if (!status.ok()) {
      EXPECT_EQ(status.message(), "injected fault at train.step");
    }
  }
  // Only the subject's passages count.
  EXPECT_TRUE(fault_point(FaultPoint::kOutputFsync, "b.bin").ok());
  EXPECT_TRUE(fault_point(FaultPoint::kOutputFsync, "a.bin").ok());
  EXPECT_TRUE(fault_point(FaultPoint::kOutputFsync, "b.bin").ok());
  const Status second = fault_point(FaultPoint::kOutputFsync, "a.bin");
  EXPECT_EQ(second.message(), "injected fault at output.fsync (a.bin)");
  EXPECT_TRUE(fault_point(FaultPoint::kOutputFsync, "a.bin").ok());
  EXPECT_EQ(fault_subject("/x/y/a.bin"), "a.bin");
  EXPECT_EQ(fault_subject("a.bin"), "a.bin");
}

class OutputFiles : public testing::TempDirTest {
 protected:
  void TearDown() override {
    ASSERT_TRUE(arm_faults("").ok());
    TempDirTest::TearDown();
  }
};

TEST_F(OutputFiles, AFailedFsyncOrRenameLeavesTheDestinationAsItWas) {
  const std::string file = path("f.bin");
  ASSERT_TRUE(write_file(file, "old").ok());
  for (const char* point : {"output.fsync", "output.rename"}) {
    SCOPED_TRACE(point);
    ASSERT_TRUE(arm_faults(std::string(point) + ":f.bin=error").ok());
    const Status status = write_file(file, "new bytes");
    const std::string what =
        std::string(point) == "output.fsync" ? "fsync failed" : "cannot rename the temporary";
    EXPECT_EQ(status.code(), StatusCode::kUnavailable);
    EXPECT_EQ(status.message().rfind(file + ": " + what, 0), 0u) << status.message();
    EXPECT_NE(status.message().find("Input/output error"), std::string::npos) << status.message();
    EXPECT_EQ(read_all(file), "old");
    EXPECT_EQ(names_in(dir_), std::vector<std::string>{"f.bin"}) << "a temporary file was left";
  }
  ASSERT_TRUE(arm_faults("").ok());
  ASSERT_TRUE(write_file(file, "new").ok());
  EXPECT_EQ(read_all(file), "new");
}

// A process killed at each point: the destination is the old file or the
// whole new one, and the next lock on the directory removes what was left.
TEST_F(OutputFiles, AKillAtEachPointLeavesTheOldFileOrTheWholeNewOne) {
  // The "fast" death-test style: the child is a fork that shares this
  // test's directory (the "threadsafe" style would run in another one).
  GTEST_FLAG_SET(death_test_style, "fast");
  const std::string file = path("f.bin");
  for (const auto& [point, after] : {std::pair<const char*, const char*>{"output.fsync", "old"},
                                     {"output.rename", "old"},
                                     {"output.renamed", "new"}}) {
    SCOPED_TRACE(point);
    ASSERT_TRUE(write_file(file, "old").ok());
    EXPECT_EXIT(
        {
          if (!arm_faults(std::string(point) + ":f.bin=kill").ok()) std::_Exit(3);
          (void)write_file(file, "new");
          std::_Exit(4);  // not reached: the point kills the process
        },
        ::testing::KilledBySignal(SIGKILL), "");
    EXPECT_EQ(read_all(file), after);
    const std::size_t left = names_in(dir_).size();
    EXPECT_EQ(left, std::string(after) == "old" ? 2u : 1u) << "the temporary file of the killed write";
    auto lock = DirectoryLock::acquire(dir_.string(), "test");
    ASSERT_TRUE(lock.ok()) << lock.status().to_string();
    EXPECT_EQ(lock->removed_temporaries().size(), left - 1);
    EXPECT_EQ(names_in(dir_), (std::vector<std::string>{".lock", "f.bin"}));
    std::filesystem::remove(path(".lock"));
  }
}

}  // namespace
}  // namespace systole
