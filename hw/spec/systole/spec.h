// SPDX-License-Identifier: Apache-2.0
// Hardware parameters and the AXI4-Lite register map shared by the HLS kernel,
// the RTL, the driver and the host. Nothing here may be typed twice elsewhere.
#pragma once

#include <array>
#include <cstdint>

namespace systole::spec {

// Version of the kernel interface (register map + command-list format).
// Bump the major number on any incompatible change.
inline constexpr uint32_t kVersionMajor = 2;
inline constexpr uint32_t kVersionMinor = 0;
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

  constexpr uint32_t max_m() const { return 1024; }
  constexpr uint32_t max_k() const { return 8 * rows; }
  constexpr uint32_t max_n() const { return 65536; }
  // Maximum number of descriptors in one command list.
  constexpr uint32_t max_descriptors() const { return 65536; }
};

// The configurations the sw_emu backend carries and the RTL is verified on.
// 128 x 128 (one TPU MXU) is the default; the small ones build the same
// sources for fast tests and small boards.
inline constexpr ArrayShape kDefaultShape{128, 128};
inline constexpr ArrayShape kSupportedShapes[] = {{4, 4}, {8, 8}, {16, 16}, {32, 32}, {64, 64}, {128, 128}};

// Error codes written to the STATUS register. A launch that ends with a code
// other than kOk has written nothing to memory (the whole command list is
// validated before the first descriptor executes), except kAxiError, which
// can strike mid-list.
enum class ErrorCode : uint32_t {
  kOk = 0,
  kBadMagic = 1,           // command-list header magic is not kCommandListMagic
  kBadVersion = 2,         // header version major differs from kVersionMajor
  kBadCount = 3,           // zero descriptors or more than max_descriptors()
  kBadOpcode = 4,          // descriptor opcode unknown
  kBadFlags = 5,           // reserved flag or field bits set
  kBadDimension = 6,       // M, N or K is zero or above the device limit
  kBadLeadingDim = 7,      // a leading dimension is smaller than its row
  kMisalignedAddress = 8,  // an address is not a multiple of its element size
  kAddressOutOfRange = 9,  // an operand or the list itself leaves device memory
  kAxiError = 10,          // the memory answered SLVERR/DECERR (hw_emu, boards)
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
// xrt::kernel drives the kernel unchanged; arguments start at 0x10.
// 64-bit values occupy two registers, low word first.
namespace reg {
inline constexpr uint32_t kControl = 0x00;  // ap_ctrl_hs
inline constexpr uint32_t kGlobalIntEnable = 0x04;
inline constexpr uint32_t kIpIntEnable = 0x08;
inline constexpr uint32_t kIpIntStatus = 0x0C;
// Arguments (read/write): one base-address register per m_axi port (see
// kPortNames), as Vitis gives every pointer argument, then the window.
// Descriptor addresses are offsets from their port's base (A from the a
// ports', B from the b ports', C and bias from the c ports'); the command
// list's address is port 0's register. The emulated devices use base 0, so
// offsets are device addresses; on a board each base is the address of a
// buffer object (the ports of one group are given the same buffer).
inline constexpr uint32_t kPortBaseLo = 0x10;  // port p: kPortBaseLo + 8 p
constexpr uint32_t port_base(uint32_t port) { return kPortBaseLo + 8 * port; }
inline constexpr uint32_t kCommandAddrLo = kPortBaseLo;  // command list (port cmd)
inline constexpr uint32_t kCommandAddrHi = kPortBaseLo + 4;
inline constexpr uint32_t kMemBytesLo = 0x68;  // window each port may
inline constexpr uint32_t kMemBytesHi = 0x6C;  // address from its base
// Results of the last launch (read-only).
inline constexpr uint32_t kStatus = 0x80;      // ErrorCode
inline constexpr uint32_t kErrorIndex = 0x84;  // failing descriptor, or
                                               // 0xFFFFFFFF for the header
inline constexpr uint32_t kDescriptorsDone = 0x88;
inline constexpr uint32_t kBusyCyclesLo = 0x90;
inline constexpr uint32_t kBusyCyclesHi = 0x94;
inline constexpr uint32_t kMacsLo = 0x98;
inline constexpr uint32_t kMacsHi = 0x9C;
inline constexpr uint32_t kDmaReadBytesLo = 0xA0;
inline constexpr uint32_t kDmaReadBytesHi = 0xA4;
inline constexpr uint32_t kDmaWriteBytesLo = 0xA8;
inline constexpr uint32_t kDmaWriteBytesHi = 0xAC;
inline constexpr uint32_t kStallCyclesLo = 0xB0;
inline constexpr uint32_t kStallCyclesHi = 0xB4;
// Identification (read-only constants of the build).
inline constexpr uint32_t kId = 0xC0;       // kDeviceId
inline constexpr uint32_t kVersion = 0xC4;  // spec::kVersion
inline constexpr uint32_t kArrayRows = 0xC8;
inline constexpr uint32_t kArrayCols = 0xCC;
inline constexpr uint32_t kMaxM = 0xD0;
inline constexpr uint32_t kMaxN = 0xD4;
inline constexpr uint32_t kMaxK = 0xD8;
inline constexpr uint32_t kBeatBytes = 0xDC;
inline constexpr uint32_t kMaxDescriptors = 0xE0;
inline constexpr uint32_t kMapEnd = 0xE4;  // first unused offset
}  // namespace reg

// The kernel's arguments as Vitis and XRT see them: xrt::kernel argument
// i is kKernelArgs[i] (the HLS top function takes its parameters in this
// order). `offset` is the argument's register in the map above, which the
// RTL kernel implements; a Vitis-HLS kernel gets offsets of the tool's
// choosing, so a host reads them from the xclbin by name. Memory arguments
// are the m_axi ports; outputs are written by the kernel on every launch.
struct KernelArg {
  const char* name;
  uint32_t offset;  // in the register map above
  uint32_t bytes;
  bool memory;  // an m_axi port's base address
  bool output;
};
namespace detail {
inline constexpr KernelArg kScalarArgs[] = {
    {"mem_bytes", reg::kMemBytesLo, 8, false, false},
    {"status", reg::kStatus, 4, false, true},
    {"error_index", reg::kErrorIndex, 4, false, true},
    {"descriptors_done", reg::kDescriptorsDone, 4, false, true},
    {"busy_cycles", reg::kBusyCyclesLo, 8, false, true},
    {"macs", reg::kMacsLo, 8, false, true},
    {"dma_read_bytes", reg::kDmaReadBytesLo, 8, false, true},
    {"dma_write_bytes", reg::kDmaWriteBytesLo, 8, false, true},
    {"stall_cycles", reg::kStallCyclesLo, 8, false, true},
    {"id", reg::kId, 4, false, true},
    {"version", reg::kVersion, 4, false, true},
    {"array_rows", reg::kArrayRows, 4, false, true},
    {"array_cols", reg::kArrayCols, 4, false, true},
    {"max_m", reg::kMaxM, 4, false, true},
    {"max_n", reg::kMaxN, 4, false, true},
    {"max_k", reg::kMaxK, 4, false, true},
    {"beat_bytes", reg::kBeatBytes, 4, false, true},
    {"max_descriptors", reg::kMaxDescriptors, 4, false, true},
};
constexpr auto kernel_args() {
  std::array<KernelArg, kMemoryPorts + std::size(kScalarArgs)> args{};
  for (uint32_t p = 0; p < kMemoryPorts; ++p) args[p] = {kPortNames[p], reg::port_base(p), 8, true, false};
  for (std::size_t i = 0; i < std::size(kScalarArgs); ++i) args[kMemoryPorts + i] = kScalarArgs[i];
  return args;
}
}  // namespace detail
// The memory ports (kPortNames, in order), then the scalars.
inline constexpr auto kKernelArgs = detail::kernel_args();
static_assert(reg::port_base(kMemoryPorts) <= reg::kMemBytesLo, "the port bases fit before the window");

// The kernel's name in an xclbin: the RTL kernel (hw/rtl/systole_rtl.sv,
// the top of hw/rtl, packaged by Makefile.fpga) and the HLS kernel
// (hw/hls/systole_top.cpp).
inline constexpr const char* kRtlKernelName = "systole_rtl";
inline constexpr const char* kHlsKernelName = "systole_top";

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
};

}  // namespace systole::spec
