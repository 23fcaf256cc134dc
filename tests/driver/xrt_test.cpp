// SPDX-License-Identifier: Apache-2.0
// The xrt backend without a board (label unit): it reads compute units,
// argument registers and HBM banks from xclbins (assembled here, read by
// XRT's own parser), checks them against hw/spec, and a user without an
// xclbin or a board gets an error that says which.
#include <gtest/gtest.h>

#include <filesystem>

#include "common/temp_dir_test.h"
#include "driver/xclbin_writer.h"
#include "systole/driver.h"
#include "systole/spec.h"
#include "xclbin_topology.h"

namespace systole {
namespace {

using detail::read_xclbin_topology;
using testing::make_xclbin;
using testing::systole_xclbin;
using testing::XclbinDescription;

class Xclbin : public testing::TempDirTest {
 protected:
  std::string write(const XclbinDescription& description, const std::string& name = "k.xclbin") {
    const std::string file_path = path(name);
    EXPECT_TRUE(testing::write_file(file_path, make_xclbin(description)));
    return file_path;
  }
  std::string error_of(const XclbinDescription& description) {
    auto topology = read_xclbin_topology(write(description));
    return topology.ok() ? "(no error)" : topology.status().message();
  }
};

TEST_F(Xclbin, GivesComputeUnitsRegistersAndBanks) {
  XclbinDescription description = systole_xclbin(3);
  description.banks[2][1] = {17, 8};  // unit 3's port a0: two banks, out of order, the host's among them
  const std::string path = write(description);
  auto topology = read_xclbin_topology(path);
  ASSERT_TRUE(topology.ok()) << topology.status().to_string();
  EXPECT_EQ(topology->kernel, spec::kRtlKernelName);
  EXPECT_EQ(topology->platform, "xilinx_u55c_gen3x16_xdma_3_202210_1");
  EXPECT_EQ(topology->hbm_banks, 32u);
  EXPECT_EQ(topology->bank_bytes, 256ull << 20);
  ASSERT_EQ(topology->units.size(), 3u);
  for (uint32_t u = 0; u < 3; ++u) {
    const auto& unit = topology->units[u];
    EXPECT_EQ(unit.name, std::string(spec::kRtlKernelName) + "_" + std::to_string(u + 1));
    ASSERT_EQ(unit.offsets.size(), std::size(spec::kKernelArgs));
    for (std::size_t i = 0; i < unit.offsets.size(); ++i)
      EXPECT_EQ(unit.offsets[i], spec::kKernelArgs[i].offset) << spec::kKernelArgs[i].name;
    ASSERT_EQ(unit.banks.size(), spec::kMemoryPorts) << "a bank list per port";
    for (std::size_t port = 0; port < spec::kMemoryPorts; ++port) {
      const std::vector<uint32_t> expected =
          u == 2 && port == 1 ? std::vector<uint32_t>{8, 17}
                              : std::vector<uint32_t>{4 * u, 4 * u + 1, 4 * u + 2, 4 * u + 3};
      EXPECT_EQ(unit.banks[port], expected) << unit.name << " port " << port;
    }
  }
  for (uint32_t b = 0; b < 32; ++b) EXPECT_EQ(topology->bank_memory_index[b], int32_t(b));
}

TEST_F(Xclbin, AnHlsKernelKeepsTheRegistersVitisGaveIt) {
  XclbinDescription description = systole_xclbin(1);
  description.kernel = spec::kHlsKernelName;
  for (std::size_t i = 4; i < description.args.size(); ++i)
    description.args[i].offset = 0x100 + 0x10 * uint32_t(i);
  auto topology = read_xclbin_topology(write(description));
  ASSERT_TRUE(topology.ok()) << topology.status().to_string();
  EXPECT_EQ(topology->kernel, spec::kHlsKernelName);
  EXPECT_EQ(topology->units[0].offsets[5], 0x150u) << "status";
}

TEST_F(Xclbin, MismatchesWithHwSpecAreErrorsThatNameThem) {
  XclbinDescription moved = systole_xclbin(1);
  moved.args[1].offset = 0x1C;
  EXPECT_NE(error_of(moved).find("argument 'a0' of systole_rtl is at register 0x1c, hw/spec's map has 0x18"),
            std::string::npos)
      << error_of(moved);

  XclbinDescription renamed = systole_xclbin(1);
  renamed.args[3].name = "out";
  EXPECT_NE(error_of(renamed).find("systole_rtl argument 3 is 'out', hw/spec expects 'a2'"),
            std::string::npos)
      << error_of(renamed);

  XclbinDescription short_list = systole_xclbin(1);
  short_list.args.pop_back();
  EXPECT_NE(error_of(short_list)
                .find("has " + std::to_string(std::size(spec::kKernelArgs) - 1) + " arguments, hw/spec " +
                      std::to_string(std::size(spec::kKernelArgs))),
            std::string::npos)
      << error_of(short_list);

  XclbinDescription other = systole_xclbin(1);
  other.kernel = "vadd";
  EXPECT_NE(error_of(other).find("no Systole kernel (systole_rtl or systole_top); it has: vadd"),
            std::string::npos)
      << error_of(other);

  XclbinDescription unconnected = systole_xclbin(2);
  unconnected.banks[1][spec::kFirstBPort].clear();
  EXPECT_NE(error_of(unconnected).find("systole_rtl_2 argument 'b0' is connected to no memory"),
            std::string::npos)
      << error_of(unconnected);

  // Linked with BANKS_PER_CU=2: unit 2's ports reach HBM[2..3], not the
  // banks the host stages its operands in.
  XclbinDescription two_banks = systole_xclbin(2);
  for (std::vector<uint32_t>& port : two_banks.banks[1]) port = {2, 3};
  EXPECT_NE(error_of(two_banks).find(
                "systole_rtl_2 argument 'cmd' reaches HBM[2, 3], but the host stages it in HBM[7] (4 banks "
                "per compute unit, unit 1 in HBM[4..7]; hw/spec/systole/boards.h): link the bitstream with "
                "BANKS_PER_CU=4"),
            std::string::npos)
      << error_of(two_banks);

  XclbinDescription ddr = systole_xclbin(1);
  ddr.memory_kind = "DDR";
  ddr.hbm_banks = 4;
  EXPECT_NE(error_of(ddr).find("no HBM banks in the memory topology"), std::string::npos) << error_of(ddr);
}

TEST_F(Xclbin, MissingOrBrokenFilesAreNamed) {
  auto none = read_xclbin_topology("");
  EXPECT_NE(none.status().message().find("no xclbin given"), std::string::npos);
  const std::string missing = path("missing.xclbin");
  EXPECT_EQ(read_xclbin_topology(missing).status().message(), missing + ": cannot open");
  const std::string garbage = path("garbage.xclbin");
  ASSERT_TRUE(testing::write_file(garbage, std::vector<char>(600, 'x')));
  auto broken = read_xclbin_topology(garbage);
  EXPECT_EQ(broken.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(broken.status().message().find(garbage + ": not a readable xclbin"), std::string::npos)
      << broken.status().to_string();
}

TEST_F(Xclbin, OpeningTheXrtBackendChecksTheXclbinThenLooksForTheBoard) {
  DeviceOptions options;
  auto no_xclbin = Device::open("xrt", 0, options);
  ASSERT_FALSE(no_xclbin.ok());
  EXPECT_NE(no_xclbin.status().message().find("no xclbin given"), std::string::npos);

  options.xclbin = path("missing.xclbin");
  EXPECT_EQ(Device::open("xrt", 0, options).status().message(), options.xclbin + ": cannot open");

  // A valid xclbin on a machine without an Alveo board (CI, this one).
  options.xclbin = write(systole_xclbin(2));
  auto no_board = Device::open("xrt", 0, options);
  ASSERT_FALSE(no_board.ok());
  EXPECT_EQ(no_board.status().code(), StatusCode::kNotFound) << no_board.status().to_string();
  EXPECT_NE(no_board.status().message().find("xrt: cannot open device 0"), std::string::npos)
      << no_board.status().to_string();
  std::printf("without a board: %s\n", no_board.status().to_string().c_str());
}

}  // namespace
}  // namespace systole
