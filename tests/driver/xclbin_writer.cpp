// SPDX-License-Identifier: Apache-2.0
#include "driver/xclbin_writer.h"

#include <xrt/xclbin.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "systole/spec.h"

namespace systole::testing {
namespace {

// A section: its kind, and bytes that start with the count field of the
// section's structure.
struct Section {
  axlf_section_kind kind;
  std::vector<char> bytes;
};

std::string hex(uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

}  // namespace

std::vector<XclbinArg> spec_kernel_args() {
  std::vector<XclbinArg> args;
  for (const spec::KernelArg& arg : spec::kKernelArgs)
    args.push_back({arg.name, arg.offset, arg.bytes, arg.memory});
  return args;
}

XclbinDescription systole_xclbin(uint32_t compute_units) {
  XclbinDescription d;
  d.args = spec_kernel_args();
  d.compute_units = compute_units;
  for (uint32_t u = 0; u < compute_units; ++u) {
    std::vector<std::vector<uint32_t>> per_arg;
    for (const XclbinArg& arg : d.args)
      if (arg.memory) per_arg.push_back({4 * u, 4 * u + 1, 4 * u + 2, 4 * u + 3});
    d.banks.push_back(per_arg);
  }
  return d;
}

std::vector<char> make_xclbin(const XclbinDescription& d) {
  std::vector<Section> sections;

  // MEM_TOPOLOGY: HBM[0..banks-1], contiguous.
  {
    const std::size_t count = d.hbm_banks;
    std::vector<char> bytes(offsetof(mem_topology, m_mem_data) + count * sizeof(mem_data));
    auto* topology = reinterpret_cast<mem_topology*>(bytes.data());
    topology->m_count = int32_t(count);
    for (std::size_t b = 0; b < count; ++b) {
      mem_data& mem = topology->m_mem_data[b];
      mem.m_type = d.memory_kind == "HBM" ? MEM_HBM : MEM_DDR4;
      mem.m_used = 1;
      mem.m_size = d.bank_bytes / 1024;
      mem.m_base_address = b * d.bank_bytes;
      const std::string tag = d.memory_kind + "[" + std::to_string(b) + "]";
      std::memcpy(mem.m_tag, tag.c_str(), std::min(tag.size() + 1, sizeof mem.m_tag));
    }
    sections.push_back({MEM_TOPOLOGY, std::move(bytes)});
  }
  // IP_LAYOUT: one kernel instance per compute unit, 64 KiB apart.
  {
    std::vector<char> bytes(offsetof(ip_layout, m_ip_data) + d.compute_units * sizeof(ip_data));
    auto* layout = reinterpret_cast<ip_layout*>(bytes.data());
    layout->m_count = int32_t(d.compute_units);
    for (uint32_t u = 0; u < d.compute_units; ++u) {
      ip_data& ip = layout->m_ip_data[u];
      ip.m_type = IP_KERNEL;
      ip.properties = (AP_CTRL_HS << IP_CONTROL_SHIFT) | IP_INT_ENABLE_MASK;
      ip.m_base_address = 0x1800000 + 0x10000ull * u;
      const std::string name = d.kernel + ":" + d.kernel + "_" + std::to_string(u + 1);
      std::memcpy(ip.m_name, name.c_str(), std::min(name.size() + 1, sizeof ip.m_name));
    }
    sections.push_back({IP_LAYOUT, std::move(bytes)});
  }
  // CONNECTIVITY: every (compute unit, memory argument, bank).
  {
    std::vector<connection> connections;
    for (uint32_t u = 0; u < d.compute_units && u < d.banks.size(); ++u) {
      std::size_t memory_arg = 0;
      for (std::size_t index = 0; index < d.args.size(); ++index) {
        if (!d.args[index].memory) continue;
        if (memory_arg < d.banks[u].size())
          for (uint32_t bank : d.banks[u][memory_arg])
            connections.push_back({int32_t(index), int32_t(u), int32_t(bank)});
        ++memory_arg;
      }
    }
    std::vector<char> bytes(offsetof(connectivity, m_connection) + connections.size() * sizeof(connection));
    auto* table = reinterpret_cast<connectivity*>(bytes.data());
    table->m_count = int32_t(connections.size());
    std::memcpy(table->m_connection, connections.data(), connections.size() * sizeof(connection));
    sections.push_back({CONNECTIVITY, std::move(bytes)});
  }
  // EMBEDDED_METADATA: the kernel's ports, arguments and instances.
  {
    std::ostringstream xml;
    xml << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        << "<project name=\"systole\"><platform vendor=\"xilinx\" name=\"test\"><device name=\"fpga0\">"
        << "<core name=\"OCL_REGION_0\" target=\"bitstream\" type=\"clc_region\" numComputeUnits=\""
        << d.compute_units << "\">\n"
        << "<kernel name=\"" << d.kernel << "\" language=\"ip_c\" hwControlProtocol=\"ap_ctrl_hs\">\n"
        << "<port name=\"s_axi_control\" mode=\"slave\" range=\"0x1000\" dataWidth=\"32\" "
           "portType=\"addressable\" base=\"0x0\"/>\n";
    for (const XclbinArg& arg : d.args)
      if (arg.memory)
        xml << "<port name=\"m_axi_" << arg.name
            << "\" mode=\"master\" range=\"0xFFFFFFFFFFFFFFFF\" dataWidth=\"512\" portType=\"addressable\" "
               "base=\"0x0\"/>\n";
    for (std::size_t index = 0; index < d.args.size(); ++index) {
      const XclbinArg& arg = d.args[index];
      xml << "<arg name=\"" << arg.name << "\" addressQualifier=\"" << (arg.memory ? 1 : 0) << "\" id=\""
          << index << "\" port=\"" << (arg.memory ? "m_axi_" + arg.name : "s_axi_control") << "\" size=\""
          << hex(arg.bytes) << "\" offset=\"" << hex(arg.offset) << "\" hostOffset=\"0x0\" hostSize=\""
          << hex(arg.bytes) << "\" type=\"" << (arg.memory ? "void*" : "uint") << "\"/>\n";
    }
    for (uint32_t u = 0; u < d.compute_units; ++u)
      xml << "<instance name=\"" << d.kernel << "_" << u + 1 << "\"><addrRemap base=\""
          << hex(0x1800000 + 0x10000ull * u) << "\" range=\"0x10000\" port=\"s_axi_control\"/></instance>\n";
    xml << "</kernel></core></device></platform></project>\n";
    const std::string text = xml.str();
    sections.push_back({EMBEDDED_METADATA, std::vector<char>(text.begin(), text.end())});
  }

  // The container: axlf with its section headers, then the sections, each
  // 8-byte aligned.
  const std::size_t headers = sizeof(axlf) + (sections.size() - 1) * sizeof(axlf_section_header);
  std::size_t at = (headers + 7) & ~std::size_t(7);
  std::vector<uint64_t> offsets;
  for (const Section& section : sections) {
    offsets.push_back(at);
    at = (at + section.bytes.size() + 7) & ~std::size_t(7);
  }
  std::vector<char> file(at, 0);
  auto* top = reinterpret_cast<axlf*>(file.data());
  std::memcpy(top->m_magic, "xclbin2", 8);
  top->m_signature_length = -1;
  std::memset(top->reserved, 0xFF, sizeof top->reserved);
  top->m_header.m_length = file.size();
  top->m_header.m_versionMajor = 2;
  top->m_header.m_mode = XCLBIN_FLAT;
  std::snprintf(reinterpret_cast<char*>(top->m_header.m_platformVBNV), sizeof top->m_header.m_platformVBNV,
                "xilinx_u55c_gen3x16_xdma_3_202210_1");
  for (int i = 0; i < 16; ++i) top->m_header.uuid[i] = static_cast<unsigned char>(0x5A + i);
  top->m_header.m_numSections = uint32_t(sections.size());
  for (std::size_t i = 0; i < sections.size(); ++i) {
    axlf_section_header& header = top->m_sections[i];
    header.m_sectionKind = sections[i].kind;
    const std::string name = "section" + std::to_string(i % 100);
    std::memcpy(header.m_sectionName, name.c_str(), name.size() + 1);
    header.m_sectionOffset = offsets[i];
    header.m_sectionSize = sections[i].bytes.size();
    std::memcpy(file.data() + offsets[i], sections[i].bytes.data(), sections[i].bytes.size());
  }
  return file;
}

bool write_file(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  return bool(out);
}

}  // namespace systole::testing
