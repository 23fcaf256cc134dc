// SPDX-License-Identifier: Apache-2.0
// Prints hw/rtl/systole_pkg.sv from the C++ spec, so the RTL's register map,
// descriptor layout, limits and error codes come from the one source. A test
// fails when the committed package differs from this program's output
// (regenerate with: cmake --build build --target sv_package).
#include <cstddef>
#include <cstdio>
#include <string>

#include "systole/descriptor.h"
#include "systole/spec.h"
#include "systole/uart_link.h"
#include "systole/validate.h"
#include "systole/vector_ops.h"

namespace {

using namespace systole::spec;

void param(const char* name, unsigned long long value, const char* comment = nullptr) {
  std::printf("  localparam int unsigned %s = 'h%llX;%s%s\n", name, value, comment ? "  // " : "",
              comment ? comment : "");
}

// The bus types, written out as they are (they derive from BeatBytes).
constexpr const char* kAxiTypes = R"sv(  // AXI4 buses (BeatBytes wide): a master port is one request struct
  // (what the master drives) and one response struct (what the slave
  // drives); the AXI4-Lite control port likewise. hw/rtl/systole_axi.svh
  // turns them into the flat ports Vitis and the simulators bind.
  localparam int unsigned AxiAddrBits = 64;
  localparam int unsigned AxiDataBits = 8 * BeatBytes;
  localparam int unsigned AxiBeatShift = $clog2(BeatBytes);  // address bits within a beat
  localparam logic [1:0] AxiBurstIncr = 2'b01;
  typedef logic [AxiAddrBits-1:0] axi_addr_t;
  typedef logic [AxiDataBits-1:0] axi_data_t;
  typedef logic [BeatBytes-1:0] axi_strb_t;
  typedef logic [1:0] axi_resp_t;  // bit 1: SLVERR or DECERR
  typedef struct packed {  // AR or AW
    axi_addr_t addr;
    logic [7:0] len;  // beats - 1
    logic [2:0] size;  // log2(bytes per beat)
    logic [1:0] burst;
  } axi_ax_t;
  typedef struct packed {
    axi_data_t data;
    axi_strb_t strb;
    logic last;
  } axi_w_t;
  typedef struct packed {
    axi_data_t data;
    axi_resp_t resp;
    logic last;
  } axi_r_t;
  typedef struct packed {
    axi_ax_t aw;
    logic aw_valid;
    axi_w_t w;
    logic w_valid;
    logic b_ready;
    axi_ax_t ar;
    logic ar_valid;
    logic r_ready;
  } axi_req_t;
  typedef struct packed {
    logic aw_ready;
    logic w_ready;
    axi_resp_t b_resp;
    logic b_valid;
    logic ar_ready;
    axi_r_t r;
    logic r_valid;
  } axi_rsp_t;
  // Their widths, for buses of several ports side by side (port p at
  // [p * AxiReqBits +: AxiReqBits]); systole_kernel checks them.
  localparam int unsigned AxiAxBits = AxiAddrBits + 8 + 3 + 2;
  localparam int unsigned AxiReqBits = 2 * AxiAxBits + AxiDataBits + BeatBytes + 1 + 5;
  localparam int unsigned AxiRspBits = AxiDataBits + 3 + 7;
  typedef logic [11:0] axil_addr_t;
  typedef logic [31:0] axil_data_t;
  typedef struct packed {
    axil_addr_t aw_addr;
    logic aw_valid;
    axil_data_t w_data;
    logic [3:0] w_strb;
    logic w_valid;
    logic b_ready;
    axil_addr_t ar_addr;
    logic ar_valid;
    logic r_ready;
  } axil_req_t;
  typedef struct packed {
    logic aw_ready;
    logic w_ready;
    axi_resp_t b_resp;
    logic b_valid;
    logic ar_ready;
    axil_data_t r_data;
    axi_resp_t r_resp;
    logic r_valid;
  } axil_rsp_t;

)sv";

// validate.h's per-opcode tables of the vector engine as packed constants
// indexed by opcode, so that the RTL checks and sequences descriptors from
// the same table as the C++: bit 4 op + i of VectorReads says whether
// opcode op reads operand i (x, y, z, w), and likewise VectorWrites;
// VectorScalars[4 op +: 4] is how many of alpha, beta, gamma, delta it takes,
// VectorFlags[8 op +: 8] the flags it allows, and bit op of VectorReadsRows
// whether x is `rows` vectors.
void vector_tables() {
  constexpr unsigned kOpcodes = 16;
  unsigned long long reads = 0, writes = 0, scalars = 0, rows = 0;
  unsigned long long flags[2] = {};  // 128 bits
  for (unsigned op = 0; op < kOpcodes; ++op) {
    if (!is_vector_opcode(uint8_t(op))) continue;
    const VectorOperands operands = vector_operands(Opcode(op));
    for (unsigned i = 0; i < 4; ++i) {
      reads |= (unsigned long long)(operands.read[i]) << (4 * op + i);
      writes |= (unsigned long long)(operands.written[i]) << (4 * op + i);
    }
    scalars |= (unsigned long long)(vector_scalar_count(Opcode(op))) << (4 * op);
    rows |= (unsigned long long)(vector_reads_rows(Opcode(op))) << op;
    flags[op / 8] |= (unsigned long long)(vector_allowed_flags(Opcode(op))) << (8 * (op % 8));
  }
  std::printf("  localparam logic [63:0] VectorReads = 64'h%016llX;\n", reads);
  std::printf("  localparam logic [63:0] VectorWrites = 64'h%016llX;\n", writes);
  std::printf("  localparam logic [63:0] VectorScalars = 64'h%016llX;\n", scalars);
  std::printf("  localparam logic [127:0] VectorFlags = 128'h%016llX%016llX;\n", flags[1], flags[0]);
  std::printf("  localparam logic [15:0] VectorReadsRows = 16'h%04llX;\n", rows);
}

}  // namespace

int main() {
  std::printf(
      "// SPDX-License-Identifier: Apache-2.0\n"
      "// GENERATED by hw/spec/gen_sv_package.cpp from hw/spec/systole/*.h. Do not edit:\n"
      "// change the C++ spec and run `cmake --build build --target sv_package`.\n"
      "// Each module uses a part of this contract; the rest is unused there by design.\n"
      "/* verilator lint_off UNUSEDPARAM */\n"
      "package systole_pkg;\n\n");
  std::printf("  // Identification\n");
  param("DeviceId", kDeviceId);
  param("Version", kVersion);
  param("VersionMajor", kVersionMajor);
  param("BeatBytes", kBeatBytes, "AXI data width in bytes");
  param("AxiBoundaryBytes", kAxiBoundaryBytes);
  param("MaxBurstBeats", kMaxBurstBeats);
  param("MaxM", ArrayShape{1, 1}.max_m());
  param("MaxN", ArrayShape{1, 1}.max_n());
  param("MaxKPerRow", ArrayShape{1, 1}.max_k(), "max_k = MaxKPerRow * ROWS");
  param("MaxDescriptors", ArrayShape{1, 1}.max_descriptors());
  param("VectorLanes", kVectorLanes, "the vector engine's lanes (at most Cols)");

  std::printf(
      "\n  // AXI4 master ports: cmd, then the a, b and c groups (port p's base\n"
      "  // register is RegPortBaseLo + 8 p)\n");
  param("APorts", kAPorts);
  param("BPorts", kBPorts);
  param("CPorts", kCPorts);
  param("FirstAPort", kFirstAPort);
  param("FirstBPort", kFirstBPort);
  param("FirstCPort", kFirstCPort);
  param("MemoryPorts", kMemoryPorts);

  std::printf("\n  // AXI4-Lite register map (byte offsets)\n");
  param("RegPortBaseLo", reg::kPortBaseLo);
  param("RegCommandAddrLo", reg::kCommandAddrLo);
  param("RegCommandAddrHi", reg::kCommandAddrHi);
  for (const Register& r : kRegisters) {
    const std::string name = std::string("Reg") + r.name;
    if (r.bytes == 4) {
      param(name.c_str(), r.offset);
    } else {
      param((name + "Lo").c_str(), r.offset);
      param((name + "Hi").c_str(), r.offset + 4);
    }
  }
  param("RegMapEnd", reg::kMapEnd);
  param("CtrlApStart", ctrl::kApStart);
  param("CtrlApDone", ctrl::kApDone);
  param("CtrlApIdle", ctrl::kApIdle);
  param("CtrlApReady", ctrl::kApReady);
  param("HeaderErrorIndex", kHeaderErrorIndex);

  param("FeatureVectorEngine", feature::kVectorEngine);

  std::printf("\n  // Command list: header and descriptors (one beat each)\n");
  param("CommandListMagic", kCommandListMagic);
#define SYSTOLE_OPCODE_PARAM(Name, name, value) param("Opcode" #Name, value);
  SYSTOLE_OPCODES(SYSTOLE_OPCODE_PARAM)
#undef SYSTOLE_OPCODE_PARAM
  param("VectorFlagNesterov", vector_flag::kNesterov);
  param("VectorFlagTranspose", vector_flag::kTranspose);
  param("MaxVectorElements", kMaxVectorElements);
  param("MaxVectorRows", kMaxVectorRows);
  vector_tables();
#define SYSTOLE_FLAG_PARAM(Name, name, bit) param("Flag" #Name, flag::k##Name);
  SYSTOLE_FLAGS(SYSTOLE_FLAG_PARAM)
#undef SYSTOLE_FLAG_PARAM
  param("FlagAll", flag::kAll);
  const struct {
    const char* name;
    std::size_t offset;
  } fields[] = {
      {"HdrMagicByte", offsetof(CommandListHeader, magic)},
      {"HdrVersionMajorByte", offsetof(CommandListHeader, version_major)},
      {"HdrCountByte", offsetof(CommandListHeader, count)},
      {"HdrReservedByte", offsetof(CommandListHeader, reserved)},
      {"DescOpcodeByte", offsetof(GemmDescriptor, opcode)},
      {"DescFlagsByte", offsetof(GemmDescriptor, flags)},
      {"DescReserved0Byte", offsetof(GemmDescriptor, reserved0)},
      {"DescMByte", offsetof(GemmDescriptor, m)},
      {"DescNByte", offsetof(GemmDescriptor, n)},
      {"DescKByte", offsetof(GemmDescriptor, k)},
      {"DescLdaByte", offsetof(GemmDescriptor, lda)},
      {"DescLdbByte", offsetof(GemmDescriptor, ldb)},
      {"DescLdcByte", offsetof(GemmDescriptor, ldc)},
      {"DescReserved1Byte", offsetof(GemmDescriptor, reserved1)},
      {"DescAAddrByte", offsetof(GemmDescriptor, a_addr)},
      {"DescBAddrByte", offsetof(GemmDescriptor, b_addr)},
      {"DescCAddrByte", offsetof(GemmDescriptor, c_addr)},
      {"DescBiasAddrByte", offsetof(GemmDescriptor, bias_addr)},
      {"VecNByte", offsetof(VectorDescriptor, n)},
      {"VecRowsByte", offsetof(VectorDescriptor, rows)},
      {"VecStrideByte", offsetof(VectorDescriptor, stride)},
      {"VecAlphaByte", offsetof(VectorDescriptor, alpha)},
      {"VecBetaByte", offsetof(VectorDescriptor, beta)},
      {"VecGammaByte", offsetof(VectorDescriptor, gamma)},
      {"VecDeltaByte", offsetof(VectorDescriptor, delta)},
      {"VecXAddrByte", offsetof(VectorDescriptor, x_addr)},
      {"VecYAddrByte", offsetof(VectorDescriptor, y_addr)},
      {"VecZAddrByte", offsetof(VectorDescriptor, z_addr)},
      {"VecWAddrByte", offsetof(VectorDescriptor, w_addr)},
  };
  for (const auto& f : fields) param(f.name, f.offset);

  std::printf("\n  // The UART host link of the small boards (hw/spec/systole/uart_link.h)\n");
  param("UartRequestSync", uart::kRequestSync);
  param("UartResponseSync", uart::kResponseSync);
  param("UartHeaderBytes", uart::kHeaderBytes);
  param("UartMaxWords", uart::kMaxWords);
  param("UartIdleBitTimes", uart::kIdleBitTimes);
#define SYSTOLE_UART_COMMAND_PARAM(Name, value, what) param("UartCmd" #Name, value);
  SYSTOLE_UART_COMMANDS(SYSTOLE_UART_COMMAND_PARAM)
#undef SYSTOLE_UART_COMMAND_PARAM
#define SYSTOLE_UART_STATUS_PARAM(Name, name, value) param("UartStatus" #Name, value);
  SYSTOLE_UART_STATUSES(SYSTOLE_UART_STATUS_PARAM)
#undef SYSTOLE_UART_STATUS_PARAM

  std::printf("\n  // Error codes (STATUS register)\n  typedef enum logic [31:0] {\n");
#define SYSTOLE_ERROR_VALUE(Name, name, value) "    Err" #Name " = 32'd" #value ",\n"
  std::string codes = SYSTOLE_ERROR_CODES(SYSTOLE_ERROR_VALUE);
#undef SYSTOLE_ERROR_VALUE
  codes.erase(codes.size() - 2, 1);  // the last enumerator's comma
  std::fputs(codes.c_str(), stdout);
  std::printf("  } error_code_e;\n\n");

  std::fputs(kAxiTypes, stdout);
  std::printf(
      "  // Numerics (NUMERICS.md)\n"
      "  localparam logic [15:0] Bf16CanonicalNan = 16'h7FC0;\n"
      "  localparam logic [31:0] Fp32CanonicalNan = 32'h7FC00000;\n\n"
      "endpackage\n"
      "/* verilator lint_on UNUSEDPARAM */\n");
  return 0;
}
