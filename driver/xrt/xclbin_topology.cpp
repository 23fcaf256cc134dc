// SPDX-License-Identifier: Apache-2.0
// Reads and checks an xclbin's kernel, compute units, arguments and banks.
#include "xclbin_topology.h"

#include <experimental/xrt_xclbin.h>

#include <algorithm>
#include <filesystem>
#include <limits>

#include "../src/hex.h"
#include "systole/boards.h"
#include "systole/spec.h"

namespace systole::detail {
namespace {

// "HBM[12]" -> 12; -1 for any other tag.
int hbm_index(const std::string& tag) {
  unsigned index = 0;
  char close = 0;
  if (std::sscanf(tag.c_str(), "HBM[%u%c", &index, &close) == 2 && close == ']' &&
      tag == "HBM[" + std::to_string(index) + "]")
    return int(index);
  return -1;
}

}  // namespace

Result<XclbinTopology> read_xclbin_topology(const std::string& path) {
  auto bad = [&](const std::string& what) {
    return Status(StatusCode::kInvalidArgument, path + ": " + what);
  };
  if (path.empty())
    return Status(
        StatusCode::kInvalidArgument,
        "xrt: no xclbin given (--xclbin, or xclbin: in accel_train's config; DeviceOptions::xclbin)");
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error))
    return Status(StatusCode::kNotFound, path + ": cannot open");

  XclbinTopology topology;
  try {
    const xrt::xclbin xclbin(path);
    topology.platform = xclbin.get_xsa_name();

    // HBM banks.
    std::vector<std::pair<int, xrt::xclbin::mem>> hbm;
    for (const xrt::xclbin::mem& mem : xclbin.get_mems()) {
      const int index = hbm_index(mem.get_tag());
      if (index >= 0 && mem.get_used()) hbm.emplace_back(index, mem);
    }
    if (hbm.empty()) return bad("no HBM banks in the memory topology (Systole needs an HBM platform)");
    std::sort(hbm.begin(), hbm.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    if (hbm.back().first + 1 != int(hbm.size()))
      return bad("the HBM banks are not numbered 0.." + std::to_string(hbm.size() - 1));
    topology.hbm_banks = uint32_t(hbm.size());
    topology.bank_bytes = std::numeric_limits<uint64_t>::max();
    for (const auto& [index, mem] : hbm) {
      topology.bank_memory_index.push_back(mem.get_index());
      topology.bank_bytes = std::min<uint64_t>(topology.bank_bytes, mem.get_size_kb() * 1024);
    }

    // The kernel.
    xrt::xclbin::kernel kernel;
    std::string found;
    for (const xrt::xclbin::kernel& candidate : xclbin.get_kernels()) {
      const std::string name = candidate.get_name();
      found += (found.empty() ? "" : ", ") + name;
      if (name == spec::kRtlKernelName || name == spec::kHlsKernelName) kernel = candidate;
    }
    if (!kernel)
      return bad(std::string("no Systole kernel (") + spec::kRtlKernelName + " or " + spec::kHlsKernelName +
                 "); it has: " + (found.empty() ? "no kernels" : found));
    topology.kernel = kernel.get_name();
    const bool rtl = topology.kernel == spec::kRtlKernelName;

    // Its compute units and their arguments.
    std::vector<xrt::xclbin::ip> units = kernel.get_cus();
    if (units.empty()) return bad("kernel " + topology.kernel + " has no compute units");
    std::sort(units.begin(), units.end(),
              [](const auto& x, const auto& y) { return x.get_name() < y.get_name(); });
    constexpr std::size_t kArgs = std::size(spec::kKernelArgs);
    for (const xrt::xclbin::ip& ip : units) {
      XclbinTopology::ComputeUnit unit;
      unit.name = ip.get_name();
      if (const auto colon = unit.name.find(':'); colon != std::string::npos)
        unit.name = unit.name.substr(colon + 1);
      const std::vector<xrt::xclbin::arg> args = ip.get_args();
      if (args.size() != kArgs)
        return bad(topology.kernel + " has " + std::to_string(args.size()) + " arguments, hw/spec " +
                   std::to_string(kArgs));
      for (std::size_t i = 0; i < kArgs; ++i) {
        const spec::KernelArg& expected = spec::kKernelArgs[i];
        const xrt::xclbin::arg& arg = args[i];
        if (arg.get_name() != expected.name)
          return bad(topology.kernel + " argument " + std::to_string(i) + " is '" + arg.get_name() +
                     "', hw/spec expects '" + expected.name + "'");
        if (rtl && arg.get_offset() != expected.offset)
          return bad("argument '" + arg.get_name() + "' of " + topology.kernel + " is at register " +
                     hex(arg.get_offset()) + ", hw/spec's map has " + hex(expected.offset));
        unit.offsets.push_back(uint32_t(arg.get_offset()));
        if (!expected.memory) continue;
        std::vector<uint32_t> banks;
        for (const xrt::xclbin::mem& mem : arg.get_mems()) {
          const int index = hbm_index(mem.get_tag());
          if (index < 0)
            return bad(unit.name + " argument '" + expected.name + "' is connected to " + mem.get_tag() +
                       ", not an HBM bank");
          banks.push_back(uint32_t(index));
        }
        if (banks.empty())
          return bad(unit.name + " argument '" + expected.name + "' is connected to no memory");
        std::sort(banks.begin(), banks.end());
        // The host stages this port's operand in one bank of the unit's
        // four; the bitstream must connect the port to it.
        const uint32_t index = uint32_t(topology.units.size());
        const uint32_t port = uint32_t(unit.banks.size());
        const uint32_t host_bank = spec::operand_bank(index, spec::port_operand(port), topology.hbm_banks);
        if (!std::binary_search(banks.begin(), banks.end(), host_bank)) {
          std::string reached;
          for (uint32_t bank : banks) reached += (reached.empty() ? "" : ", ") + std::to_string(bank);
          return bad(unit.name + " argument '" + expected.name + "' reaches HBM[" + reached +
                     "], but the host stages it in HBM[" + std::to_string(host_bank) + "] (" +
                     std::to_string(spec::kBanksPerComputeUnit) + " banks per compute unit, unit " +
                     std::to_string(index) + " in HBM[" + std::to_string(index * spec::kBanksPerComputeUnit) +
                     ".." + std::to_string(index * spec::kBanksPerComputeUnit + 3) +
                     "]; hw/spec/systole/boards.h): link the bitstream with BANKS_PER_CU=" +
                     std::to_string(spec::kBanksPerComputeUnit));
        }
        unit.banks.push_back(std::move(banks));
      }
      topology.units.push_back(std::move(unit));
    }
  } catch (const std::exception& e) {
    return Status(StatusCode::kDataLoss, path + ": not a readable xclbin (" + e.what() + ")");
  }
  return topology;
}

}  // namespace systole::detail
