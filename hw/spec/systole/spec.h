// SPDX-License-Identifier: Apache-2.0
// Hardware parameters and the AXI4-Lite register map shared by the HLS kernel,
// the RTL, the driver and the host. Nothing here may be typed twice elsewhere.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>

namespace systole::spec {

// Version of the kernel interface (register map + command-list format).
// Bump the major number on any incompatible change.
inline constexpr uint32_t kVersionMajor = 2;
inline constexpr uint32_t kVersionMinor = 2;  // 1: the vector engine; 2: to_bf16
inline constexpr uint32_t kVersion = (kVersionMajor << 16) | kVersionMinor;
inline constexpr uint32_t kDeviceId = 0x53595354;  // "SYST"

// The DMA moves whole beats of this many bytes (512-bit AXI4 data width).
inline constexpr uint32_t kBeatBytes = 64;
// AXI4 bursts never cross a 4 KiB boundary and carry at most 256 beats.
inline constexpr uint32_t kAxiBoundaryBytes = 4096;
inline constexpr uint32_t kMaxBurstBeats = 256;

// Limits of one GEMM descriptor, for an array of `rows` x `cols` PEs. The
// array's rows run along K (one weight row per PE row) and its columns along
// N. The activation buffer holds an M x K block; the accumulator memory holds
// M x cols fp32 partial sums; N needs no buffer (the kernel walks N tiles).
struct ArrayShape {
  uint32_t rows;
  uint32_t cols;
  // The compact kernel of the small boards (hw/rtl/systole_lite.sv) holds
  // fewer accumulator rows.
  uint32_t m_limit = 1024;
  // What the kernel implements besides the array (feature::k* bits), as
  // its Features register reports it.
  uint32_t features = 0;

  constexpr uint32_t max_m() const { return m_limit; }
  constexpr uint32_t max_k() const { return 8 * rows; }
  constexpr uint32_t max_n() const { return 65536; }
  // Maximum number of descriptors in one command list.
  constexpr uint32_t max_descriptors() const { return 65536; }
};

// The array sizes the project builds (square, rows = cols), listed once.
// sw_emu carries every size of SYSTOLE_ARRAY_SIZES; hw_emu verilates the
// RTL at those of SYSTOLE_HW_EMU_SIZES: the test sizes, 32 x 32 (the
// largest that fits a U55C) and 128 x 128 (one TPU MXU), not 64 x 64, which
// no board or test needs and which would add to every build. The backends'
// dispatch and the Verilator builds are generated from these two lines
// (CMake reads them: cmake/ArraySizes.cmake), so each stays on one line.
#define SYSTOLE_ARRAY_SIZES(X) X(4) X(8) X(16) X(32) X(64) X(128)
#define SYSTOLE_HW_EMU_SIZES(X) X(4) X(8) X(16) X(32) X(128)
// The small boards' shapes (the compact kernel, hw/rtl/systole_lite.sv:
// 1 x 1 on an iCEBreaker, 2 x 1 in its RTL tests): sw_emu's HLS engine has
// them too, so a board's results can be checked bit for bit.
#define SYSTOLE_BOARD_SHAPES(X) X(1, 1) X(2, 1)

// 128 x 128 (one TPU MXU) is the default; the small ones build the same
// sources for fast tests and small boards.
inline constexpr ArrayShape kDefaultShape{128, 128};
inline constexpr ArrayShape kSupportedShapes[] = {
#define SYSTOLE_SHAPE(size) {size, size},
    SYSTOLE_ARRAY_SIZES(SYSTOLE_SHAPE)
#undef SYSTOLE_SHAPE
};

// Error codes written to the STATUS register. A launch that ends with a code
// other than kOk has written nothing to memory (the whole command list is
// validated before the first descriptor executes), except kAxiError, which
// can strike mid-list. One row per code: X(Name, name, value); the enum
// (k<Name>), error_code_name() ("name") and the SV package's error_code_e
// (Err<Name>) are made from it.
#define SYSTOLE_ERROR_CODES(X)                                                               \
  X(Ok, ok, 0)                                                                               \
  X(BadMagic, bad_magic, 1)                      /* header magic is not kCommandListMagic */ \
  X(BadVersion, bad_version, 2)                  /* header version major != kVersionMajor */ \
  X(BadCount, bad_count, 3)                      /* zero or > max_descriptors() */           \
  X(BadOpcode, bad_opcode, 4)                    /* descriptor opcode unknown */             \
  X(BadFlags, bad_flags, 5)                      /* reserved flag or field bits set */       \
  X(BadDimension, bad_dimension, 6)              /* M, N or K zero or above the limit */     \
  X(BadLeadingDim, bad_leading_dim, 7)           /* a leading dimension < its row */         \
  X(MisalignedAddress, misaligned_address, 8)    /* not a multiple of the element size */    \
  X(AddressOutOfRange, address_out_of_range, 9)  /* an operand or the list leaves memory */  \
  X(AxiError, axi_error, 10)                     /* the memory answered SLVERR/DECERR */     \
  X(OverlappingBuffers, overlapping_buffers, 11) /* a vector output overlaps another operand */

enum class ErrorCode : uint32_t {
#define SYSTOLE_ERROR_ENUM(Name, name, value) k##Name = value,
  SYSTOLE_ERROR_CODES(SYSTOLE_ERROR_ENUM)
#undef SYSTOLE_ERROR_ENUM
};

// Name of an error code ("bad_dimension"), for messages and logs.
const char* error_code_name(ErrorCode code);

// kErrorIndex value when the error is in the header or the launch arguments
// rather than in a descriptor.
inline constexpr uint32_t kHeaderErrorIndex = 0xFFFFFFFF;

// The kernel's AXI4 master ports, in argument order: the command list, then
// A striped over kAPorts ports, the weights over kBPorts and C (read when
// accumulating, and written) and the bias over kCPorts. Request i of an
// operand's stream goes to port i % count of its group, so a group moves
// count beats per cycle: at 128 x 128 a K tile of A's rows (4 beats each)
// arrives at the pace the array consumes them, and C's rows leave at it.
inline constexpr uint32_t kAPorts = 4;
inline constexpr uint32_t kBPorts = 2;
inline constexpr uint32_t kCPorts = 4;
inline constexpr uint32_t kFirstAPort = 1;
inline constexpr uint32_t kFirstBPort = kFirstAPort + kAPorts;
inline constexpr uint32_t kFirstCPort = kFirstBPort + kBPorts;
inline constexpr uint32_t kMemoryPorts = kFirstCPort + kCPorts;
// Each port's name: its Vitis argument and its m_axi_gmem_<name> interface.
inline constexpr const char* kPortNames[] = {"cmd", "a0", "a1", "a2", "a3", "b0",
                                             "b1",  "c0", "c1", "c2", "c3"};
static_assert(std::size(kPortNames) == kMemoryPorts, "a name per port");

// AXI4-Lite register map. 0x00-0x0C follow Vitis ap_ctrl_hs so that XRT's
// xrt::kernel drives the kernel unchanged; arguments start at 0x10 with one
// base-address register per m_axi port (kPortNames order), as Vitis gives
// every pointer argument. 64-bit values occupy two registers, low word
// first. Descriptor addresses are offsets from their port's base (A from
// the a ports', B from the b ports', C and bias from the c ports'); the
// command list's address is port 0's register. The emulated devices use
// base 0, so offsets are device addresses; on a board each base is the
// address of a buffer object (the ports of one group get the same buffer).
//
// The other registers, one row each: X(Name, name, offset, bytes, role).
// Name makes the constant reg::k<Name> (reg::k<Name>Lo and k<Name>Hi for 8
// bytes) and the SV package's Reg<Name>; name is the kernel argument's name
// (Vitis, XRT, the interface document). Roles: kControl (ap_ctrl_hs, not an
// argument), kInput (written by the host), kOutput (written by the kernel
// on every launch; identification registers are outputs too).
#define SYSTOLE_REGISTERS(X)                                                      \
  X(Control, control, 0x00, 4, kControl)                                          \
  X(GlobalIntEnable, global_int_enable, 0x04, 4, kControl)                        \
  X(IpIntEnable, ip_int_enable, 0x08, 4, kControl)                                \
  X(IpIntStatus, ip_int_status, 0x0C, 4, kControl)                                \
  X(MemBytes, mem_bytes, 0x68, 8, kInput)      /* window each port addresses */   \
  X(Status, status, 0x80, 4, kOutput)          /* ErrorCode of the last launch */ \
  X(ErrorIndex, error_index, 0x84, 4, kOutput) /* or kHeaderErrorIndex */         \
  X(DescriptorsDone, descriptors_done, 0x88, 4, kOutput)                          \
  X(BusyCycles, busy_cycles, 0x90, 8, kOutput)                                    \
  X(Macs, macs, 0x98, 8, kOutput)                                                 \
  X(DmaReadBytes, dma_read_bytes, 0xA0, 8, kOutput)                               \
  X(DmaWriteBytes, dma_write_bytes, 0xA8, 8, kOutput)                             \
  X(StallCycles, stall_cycles, 0xB0, 8, kOutput)                                  \
  X(Id, id, 0xC0, 4, kOutput)           /* kDeviceId */                           \
  X(Version, version, 0xC4, 4, kOutput) /* kVersion */                            \
  X(ArrayRows, array_rows, 0xC8, 4, kOutput)                                      \
  X(ArrayCols, array_cols, 0xCC, 4, kOutput)                                      \
  X(MaxM, max_m, 0xD0, 4, kOutput)                                                \
  X(MaxN, max_n, 0xD4, 4, kOutput)                                                \
  X(MaxK, max_k, 0xD8, 4, kOutput)                                                \
  X(BeatBytes, beat_bytes, 0xDC, 4, kOutput)                                      \
  X(MaxDescriptors, max_descriptors, 0xE0, 4, kOutput)                            \
  X(Features, features, 0xE4, 4, kOutput) /* feature::k* bits */

enum class RegisterRole : uint8_t { kControl, kInput, kOutput };

struct Register {
  const char* name;  // the constant's name without k, e.g. "BusyCycles"
  const char* arg;   // the kernel argument's name, e.g. "busy_cycles"
  uint32_t offset;
  uint32_t bytes;  // 4, or 8 for a Lo/Hi pair
  RegisterRole role;
};

inline constexpr Register kRegisters[] = {
#define SYSTOLE_REGISTER_ROW(Name, name, offset, bytes, role) \
  {#Name, #name, offset, bytes, RegisterRole::role},
    SYSTOLE_REGISTERS(SYSTOLE_REGISTER_ROW)
#undef SYSTOLE_REGISTER_ROW
};

namespace reg {
// k<Name> for each 4-byte register; k<Name>Lo and k<Name>Hi for each 8-byte one.
#define SYSTOLE_REGISTER_CONSTANT_4(Name, offset) inline constexpr uint32_t k##Name = offset;
#define SYSTOLE_REGISTER_CONSTANT_8(Name, offset) \
  inline constexpr uint32_t k##Name##Lo = offset; \
  inline constexpr uint32_t k##Name##Hi = offset + 4;
#define SYSTOLE_REGISTER_CONSTANTS(Name, name, offset, bytes, role) \
  SYSTOLE_REGISTER_CONSTANT_##bytes(Name, offset)
SYSTOLE_REGISTERS(SYSTOLE_REGISTER_CONSTANTS)
#undef SYSTOLE_REGISTER_CONSTANTS
#undef SYSTOLE_REGISTER_CONSTANT_4
#undef SYSTOLE_REGISTER_CONSTANT_8
inline constexpr uint32_t kPortBaseLo = 0x10;  // port p: kPortBaseLo + 8 p
constexpr uint32_t port_base(uint32_t port) { return kPortBaseLo + 8 * port; }
inline constexpr uint32_t kCommandAddrLo = kPortBaseLo;  // command list (port cmd)
inline constexpr uint32_t kCommandAddrHi = kPortBaseLo + 4;
inline constexpr uint32_t kMapEnd = 0xE8;  // first unused offset
}  // namespace reg

// The table's invariants: ascending, word-aligned offsets that do not
// overlap each other or the port bases, all below kMapEnd.
constexpr bool registers_are_well_formed() {
  uint32_t next = 0;
  for (const Register& r : kRegisters) {
    if (r.offset % 4 != 0 || r.offset < next || (r.bytes != 4 && r.bytes != 8)) return false;
    if (r.offset < reg::port_base(kMemoryPorts) && r.offset + r.bytes > reg::kPortBaseLo) return false;
    next = r.offset + r.bytes;
  }
  return next <= reg::kMapEnd;
}
static_assert(registers_are_well_formed(), "kRegisters: ascending, aligned, disjoint, below kMapEnd");

// The kernel's arguments as Vitis and XRT see them: xrt::kernel argument
// i is kKernelArgs[i] (the HLS top function takes its parameters in this
// order): the memory ports (kPortNames, in order), then the registers that
// are not ap_ctrl_hs (kRegisters, in order). `offset` is the argument's
// register in the map above, which the RTL kernel implements; a Vitis-HLS
// kernel gets offsets of the tool's choosing, so a host reads them from
// the xclbin by name. Memory arguments are the m_axi ports; outputs are
// written by the kernel on every launch.
struct KernelArg {
  const char* name;
  uint32_t offset;  // in the register map above
  uint32_t bytes;
  bool memory;  // an m_axi port's base address
  bool output;
};
namespace detail {
constexpr std::size_t count_arguments() {
  std::size_t count = kMemoryPorts;
  for (const Register& r : kRegisters) count += r.role != RegisterRole::kControl;
  return count;
}
constexpr auto kernel_args() {
  std::array<KernelArg, count_arguments()> args{};
  std::size_t i = 0;
  for (uint32_t p = 0; p < kMemoryPorts; ++p) args[i++] = {kPortNames[p], reg::port_base(p), 8, true, false};
  for (const Register& r : kRegisters)
    if (r.role != RegisterRole::kControl)
      args[i++] = {r.arg, r.offset, r.bytes, false, r.role == RegisterRole::kOutput};
  return args;
}
}  // namespace detail
inline constexpr auto kKernelArgs = detail::kernel_args();

// The kernel's name in an xclbin: the RTL kernel (hw/rtl/systole_rtl.sv,
// the top of hw/rtl, packaged by Makefile.fpga) and the HLS kernel
// (hw/hls/systole_top.cpp).
inline constexpr const char* kRtlKernelName = "systole_rtl";
inline constexpr const char* kHlsKernelName = "systole_top";

// Bits of reg::kFeatures: what a kernel implements besides the array. A
// kernel without a feature ends a list that uses it with kBadOpcode, so a
// driver reads this register instead of finding out from a failed launch.
namespace feature {
// The vector engine: the fp32 elementwise opcodes of descriptor.h.
inline constexpr uint32_t kVectorEngine = 1u << 0;
inline constexpr uint32_t kAll = kVectorEngine;
}  // namespace feature

// Bits of reg::kControl (Vitis ap_ctrl_hs).
namespace ctrl {
inline constexpr uint32_t kApStart = 1u << 0;
inline constexpr uint32_t kApDone = 1u << 1;  // clear-on-read
inline constexpr uint32_t kApIdle = 1u << 2;
inline constexpr uint32_t kApReady = 1u << 3;
}  // namespace ctrl

// Performance counters of one launch, as read from the registers.
struct PerfCounters {
  uint64_t busy_cycles = 0;      // cycles from ap_start to ap_done
  uint64_t macs = 0;             // useful multiply-accumulates (M*N*K summed)
  uint64_t dma_read_bytes = 0;   // bytes moved on the read channels (beats*64)
  uint64_t dma_write_bytes = 0;  // bytes moved on the write channel
  uint64_t stall_cycles = 0;     // cycles the array waited for operands
  uint32_t descriptors_done = 0;

  // Totals over several launches.
  PerfCounters& operator+=(const PerfCounters& more) {
    busy_cycles += more.busy_cycles;
    macs += more.macs;
    dma_read_bytes += more.dma_read_bytes;
    dma_write_bytes += more.dma_write_bytes;
    stall_cycles += more.stall_cycles;
    descriptors_done += more.descriptors_done;
    return *this;
  }
};

}  // namespace systole::spec
