// SPDX-License-Identifier: Apache-2.0
// docs/kernel-interface.md against hw/spec: every register, header and
// descriptor field, flag and error code in the document's tables, at the
// offset, bit and code the spec gives it, in the spec's order, none missing.
#include <gtest/gtest.h>

#include <cstddef>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "systole/descriptor.h"
#include "systole/spec.h"

namespace systole::spec {
namespace {

using Row = std::vector<std::string>;  // a table row's cells, trimmed

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(' ');
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(' ') - first + 1);
}

// The body rows of the first table under the heading `heading`.
std::vector<Row> table_under(const std::string& heading) {
  std::ifstream in(SYSTOLE_SOURCE_DIR "/docs/kernel-interface.md");
  EXPECT_TRUE(in) << "cannot read docs/kernel-interface.md";
  std::string line;
  bool in_section = false;
  int line_in_table = 0;
  std::vector<Row> rows;
  while (std::getline(in, line)) {
    if (line.rfind("#", 0) == 0) {
      if (in_section && !rows.empty()) break;
      in_section = line == heading;
      continue;
    }
    if (!in_section) continue;
    if (line.rfind("|", 0) != 0) {
      if (!rows.empty()) break;
      continue;
    }
    if (++line_in_table <= 2) continue;  // the column names and the rule
    Row row;
    // Cells are split at '|' not preceded by a backslash.
    std::string cell;
    const std::string text = line.substr(1);
    for (std::size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '|' && (i == 0 || text[i - 1] != '\\')) {
        row.push_back(trim(cell));
        cell.clear();
      } else {
        cell += text[i];
      }
    }
    rows.push_back(row);
  }
  EXPECT_FALSE(rows.empty()) << "no table under '" << heading << "'";
  return rows;
}

std::string hex(uint32_t value, int digits) {
  std::ostringstream out;
  out << "0x" << std::uppercase << std::hex;
  out.width(digits);
  out.fill('0');
  out << value;
  return out.str();
}

// (offset, name) of the documented fields of a table whose first two
// columns are those.
std::vector<std::pair<std::string, std::string>> first_two(const std::vector<Row>& rows) {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const Row& row : rows) {
    EXPECT_GE(row.size(), 3u);
    if (row.size() >= 2) pairs.emplace_back(row[0], row[1]);
  }
  return pairs;
}

TEST(InterfaceDoc, RegisterMapIsTheSpecs) {
  std::vector<std::pair<std::string, std::string>> expected;
  for (const Register& r : kRegisters)
    if (r.role == RegisterRole::kControl) expected.emplace_back(hex(r.offset, 2), r.arg);
  const std::size_t controls = expected.size();
  for (const KernelArg& arg : kKernelArgs) expected.emplace_back(hex(arg.offset, 2), arg.name);
  const std::vector<Row> rows = table_under("## Register map");
  EXPECT_EQ(first_two(rows), expected);
  // 64-bit arguments say so; the others do not.
  for (std::size_t i = controls; i < rows.size() && i - controls < std::size(kKernelArgs); ++i) {
    const KernelArg& arg = kKernelArgs[i - controls];
    EXPECT_EQ(rows[i][2].find("64 bits") != std::string::npos, arg.bytes == 8) << arg.name;
    EXPECT_EQ(rows[i][2].rfind("R/W", 0) == 0, !arg.output) << arg.name;
  }
  std::string id_meaning;
  for (const Row& row : rows)
    if (row.size() > 3 && row[1] == "id") id_meaning = row[3];
  EXPECT_NE(id_meaning.find(hex(kDeviceId, 8)), std::string::npos) << id_meaning;
}

TEST(InterfaceDoc, CommandListLayoutIsTheSpecs) {
  const std::vector<std::pair<std::string, std::string>> header = {
      {std::to_string(offsetof(CommandListHeader, magic)), "magic"},
      {std::to_string(offsetof(CommandListHeader, version_major)), "version_major"},
      {std::to_string(offsetof(CommandListHeader, version_minor)), "version_minor"},
      {std::to_string(offsetof(CommandListHeader, count)), "count"},
      {std::to_string(offsetof(CommandListHeader, reserved)), "reserved"}};
  const std::vector<Row> header_rows = table_under("### Header");
  EXPECT_EQ(first_two(header_rows), header);
  EXPECT_NE(header_rows[0][3].find(hex(kCommandListMagic, 8)), std::string::npos);

#define FIELD(name) \
  { std::to_string(offsetof(GemmDescriptor, name)), #name }
  const std::vector<std::pair<std::string, std::string>> descriptor = {
      FIELD(opcode), FIELD(flags),  FIELD(reserved0), FIELD(m),        FIELD(n),
      FIELD(k),      FIELD(lda),    FIELD(ldb),       FIELD(ldc),      FIELD(reserved1),
      FIELD(a_addr), FIELD(b_addr), FIELD(c_addr),    FIELD(bias_addr)};
#undef FIELD
  EXPECT_EQ(first_two(table_under("### GEMM descriptor")), descriptor);
}

TEST(InterfaceDoc, FlagsAreTheSpecs) {
  std::vector<std::pair<std::string, std::string>> expected;
  uint8_t all = 0;
  for (const Flag& f : kFlags) {
    expected.emplace_back(std::to_string(f.bit), f.name);
    all |= uint8_t(1u << f.bit);
  }
  EXPECT_EQ(all, flag::kAll) << "a flag the document does not list";
  EXPECT_EQ(first_two(table_under("### Flags")), expected);
}

TEST(InterfaceDoc, ErrorCodesAreTheSpecs) {
  std::vector<std::pair<std::string, std::string>> expected;
  uint32_t code = 0;
  for (; std::string(error_code_name(ErrorCode(code))) != "unknown_error"; ++code)
    expected.emplace_back(std::to_string(code), error_code_name(ErrorCode(code)));
  EXPECT_EQ(code, uint32_t(ErrorCode::kOverlappingBuffers) + 1);
  EXPECT_EQ(first_two(table_under("## Error codes")), expected);
}

}  // namespace
}  // namespace systole::spec
