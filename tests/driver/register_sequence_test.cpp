// SPDX-License-Identifier: Apache-2.0
// The driver's register sequence against a fake register file (label unit):
// what it writes before ap_start, how it reads results and errors, and how it
// rejects a device that is not ours. Every backend relies on this sequence.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "../../driver/src/backend.h"
#include "systole/driver.h"

namespace systole {
namespace {

namespace reg = spec::reg;

class FakeBackend final : public detail::DeviceBackend {
 public:
  std::map<uint32_t, uint32_t> registers;
  std::vector<std::pair<uint32_t, uint32_t>> writes;  // (offset, value)
  bool done = false;
  int control_reads_after_done = 0;

  FakeBackend() {
    registers[reg::kId] = spec::kDeviceId;
    registers[reg::kVersion] = spec::kVersion;
    registers[reg::kArrayRows] = 16;
    registers[reg::kArrayCols] = 32;
    registers[reg::kMaxM] = 256;
    registers[reg::kMaxN] = 4096;
    registers[reg::kMaxK] = 128;
    registers[reg::kMaxDescriptors] = 100;
    registers[reg::kBeatBytes] = 64;
    registers[reg::kControl] = spec::ctrl::kApIdle;
  }

  std::string name() const override { return "fake"; }
  uint32_t compute_units() const override { return 2; }
  uint32_t hbm_banks() const override { return 4; }
  uint64_t bank_bytes() const override { return 1 << 20; }
  Result<uint64_t> allocate(std::size_t, uint32_t bank) override {
    return uint64_t(bank) * bank_bytes() + 0x1000;
  }
  void release(uint64_t) override {}
  Status write_memory(uint64_t, const void*, std::size_t) override { return ok_status(); }
  Status read_memory(uint64_t, void*, std::size_t) override { return ok_status(); }
  uint32_t read_register(uint32_t unit, uint32_t offset) override {
    EXPECT_LT(unit, 2u);
    if (offset == reg::kControl && done) {
      ++control_reads_after_done;
      done = false;
      return spec::ctrl::kApDone | spec::ctrl::kApIdle;
    }
    return registers[offset];
  }
  void write_register(uint32_t unit, uint32_t offset, uint32_t value) override {
    EXPECT_EQ(unit, 1u) << "the test starts unit 1";
    writes.emplace_back(offset, value);
  }
  bool wait_done(uint32_t, std::chrono::milliseconds) override { return done; }
};

TEST(RegisterSequence, ReadsTheDeviceDescriptionFromIdRegisters) {
  auto fake = std::make_shared<FakeBackend>();
  Result<Device> device = detail::attach_device(fake, "fake", 3);
  ASSERT_TRUE(device.ok()) << device.status().to_string();
  const DeviceInfo& info = device->info();
  EXPECT_EQ(info.shape.rows, 16u);
  EXPECT_EQ(info.shape.cols, 32u);
  EXPECT_EQ(info.max_n, 4096u);
  EXPECT_EQ(info.max_k, 128u);
  EXPECT_EQ(info.max_descriptors, 100u);
  EXPECT_EQ(info.compute_units, 2u);
  EXPECT_EQ(info.index, 3u);
}

TEST(RegisterSequence, RejectsAForeignKernelAndAnotherMajorVersion) {
  auto fake = std::make_shared<FakeBackend>();
  fake->registers[reg::kId] = 0x12345678;
  Result<Device> device = detail::attach_device(fake, "fake", 0);
  ASSERT_FALSE(device.ok());
  EXPECT_EQ(device.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(device.status().message().find("not a Systole kernel"), std::string::npos);

  fake->registers[reg::kId] = spec::kDeviceId;
  fake->registers[reg::kVersion] = (spec::kVersionMajor + 1) << 16;
  device = detail::attach_device(fake, "fake", 0);
  ASSERT_FALSE(device.ok());
  EXPECT_NE(device.status().message().find("version"), std::string::npos);
}

TEST(RegisterSequence, WritesArgumentsThenApStartAndCollectsResults) {
  auto fake = std::make_shared<FakeBackend>();
  Device device = detail::attach_device(fake, "fake", 0).value();
  Buffer list = device.allocate(4096, 2).value();
  systole::Run run = device.start(1, list).value();

  // Arguments first, each 64-bit value low word first, ap_start last.
  // The operand ports' bases are 0 (0x18 .. 0x67: a0 to c3).
  std::vector<std::pair<uint32_t, uint32_t>> expected = {{reg::kCommandAddrLo, uint32_t(list.address())},
                                                         {reg::kCommandAddrHi, 0}};
  for (uint32_t address = 0x18; address < 0x68; address += 4) expected.emplace_back(address, 0);
  expected.insert(
      expected.end(),
      {{reg::kMemBytesLo, 4u << 20}, {reg::kMemBytesHi, 0}, {reg::kControl, spec::ctrl::kApStart}});
  EXPECT_EQ(fake->writes, expected);

  // Not done yet: a timeout, and nothing read.
  Status status = run.wait(std::chrono::milliseconds(0));
  EXPECT_EQ(status.code(), StatusCode::kTimeout);

  // Done with an error in descriptor 7, and counters.
  fake->registers[reg::kStatus] = uint32_t(spec::ErrorCode::kBadLeadingDim);
  fake->registers[reg::kErrorIndex] = 7;
  fake->registers[reg::kMacsLo] = 5;
  fake->registers[reg::kMacsHi] = 1;
  fake->done = true;
  status = run.wait(std::chrono::milliseconds(0));
  EXPECT_EQ(status.code(), StatusCode::kDeviceError);
  EXPECT_NE(status.message().find("bad_leading_dim"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("descriptor 7"), std::string::npos) << status.message();
  EXPECT_EQ(fake->control_reads_after_done, 1) << "ap_done must be read (cleared) once";
  EXPECT_EQ(run.counters().macs, (uint64_t(1) << 32) + 5);
  // A second wait returns the same answer without touching the device.
  EXPECT_EQ(run.wait(std::chrono::milliseconds(0)).code(), StatusCode::kDeviceError);
  EXPECT_EQ(fake->control_reads_after_done, 1);
}

TEST(RegisterSequence, RefusesABusyUnitAndBadArguments) {
  auto fake = std::make_shared<FakeBackend>();
  Device device = detail::attach_device(fake, "fake", 0).value();
  Buffer list = device.allocate(64, 0).value();
  fake->registers[reg::kControl] = 0;  // not idle
  Result<systole::Run> run = device.start(1, list);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(fake->writes.empty()) << "nothing may be written to a busy unit";

  run = device.start(2, list);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(run.status().message().find("compute unit 2"), std::string::npos);

  run = device.start(1, Buffer());
  EXPECT_EQ(run.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace systole
