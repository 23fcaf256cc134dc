// SPDX-License-Identifier: Apache-2.0
// Hardware parameters and the AXI4-Lite register map shared by the HLS kernel,
// the RTL, the driver and the host. Nothing here may be typed twice elsewhere.
#pragma once

#include <cstdint>

namespace systole::spec {

// Version of the kernel interface (register map + command-list format).
// Bump the major number on any incompatible change.
inline constexpr uint32_t kVersionMajor = 1;
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

// AXI4-Lite register map. 0x00-0x0C follow Vitis ap_ctrl_hs so that XRT's
// xrt::kernel drives the kernel unchanged; arguments start at 0x10.
// 64-bit values occupy two registers, low word first.
namespace reg {
inline constexpr uint32_t kControl = 0x00;  // ap_ctrl_hs
inline constexpr uint32_t kGlobalIntEnable = 0x04;
inline constexpr uint32_t kIpIntEnable = 0x08;
inline constexpr uint32_t kIpIntStatus = 0x0C;
// Arguments (read/write). The four m_axi ports each have a base-address
// register, as Vitis gives every pointer argument; descriptor addresses are
// offsets from their port's base (A from a_base, B from b_base, C and bias
// from c_base). The emulated devices use base 0, so offsets are device
// addresses; on a board each base is the address of a buffer object.
inline constexpr uint32_t kCommandAddrLo = 0x10;  // command list (port cmd)
inline constexpr uint32_t kCommandAddrHi = 0x14;
inline constexpr uint32_t kABaseLo = 0x18;  // port a: activations
inline constexpr uint32_t kABaseHi = 0x1C;
inline constexpr uint32_t kBBaseLo = 0x20;  // port b: weights
inline constexpr uint32_t kBBaseHi = 0x24;
inline constexpr uint32_t kCBaseLo = 0x28;  // port c: outputs, bias
inline constexpr uint32_t kCBaseHi = 0x2C;
inline constexpr uint32_t kMemBytesLo = 0x30;  // window each port may
inline constexpr uint32_t kMemBytesHi = 0x34;  // address from its base
// Results of the last launch (read-only).
inline constexpr uint32_t kStatus = 0x40;      // ErrorCode
inline constexpr uint32_t kErrorIndex = 0x44;  // failing descriptor, or
                                               // 0xFFFFFFFF for the header
inline constexpr uint32_t kDescriptorsDone = 0x48;
inline constexpr uint32_t kBusyCyclesLo = 0x50;
inline constexpr uint32_t kBusyCyclesHi = 0x54;
inline constexpr uint32_t kMacsLo = 0x58;
inline constexpr uint32_t kMacsHi = 0x5C;
inline constexpr uint32_t kDmaReadBytesLo = 0x60;
inline constexpr uint32_t kDmaReadBytesHi = 0x64;
inline constexpr uint32_t kDmaWriteBytesLo = 0x68;
inline constexpr uint32_t kDmaWriteBytesHi = 0x6C;
inline constexpr uint32_t kStallCyclesLo = 0x70;
inline constexpr uint32_t kStallCyclesHi = 0x74;
// Identification (read-only constants of the build).
inline constexpr uint32_t kId = 0x80;       // kDeviceId
inline constexpr uint32_t kVersion = 0x84;  // spec::kVersion
inline constexpr uint32_t kArrayRows = 0x88;
inline constexpr uint32_t kArrayCols = 0x8C;
inline constexpr uint32_t kMaxM = 0x90;
inline constexpr uint32_t kMaxN = 0x94;
inline constexpr uint32_t kMaxK = 0x98;
inline constexpr uint32_t kBeatBytes = 0x9C;
inline constexpr uint32_t kMaxDescriptors = 0xA0;
inline constexpr uint32_t kMapEnd = 0xA4;  // first unused offset
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
inline constexpr KernelArg kKernelArgs[] = {
    {"cmd", reg::kCommandAddrLo, 8, true, false},
    {"a", reg::kABaseLo, 8, true, false},
    {"b", reg::kBBaseLo, 8, true, false},
    {"c", reg::kCBaseLo, 8, true, false},
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
