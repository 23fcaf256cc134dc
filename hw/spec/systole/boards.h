// SPDX-License-Identifier: Apache-2.0
// The boards Systole knows, in one table: what the card model (the perf
// backend) models, what Makefile.fpga builds for (gen_fpga_config writes
// the table out as Makefile variables), what the fit check measures
// against, and what the tools list in their help. Numbers are the vendors'
// data sheets unless a comment says otherwise.
#pragma once

#include <cstdint>
#include <string_view>

#include "systole/spec.h"

namespace systole::spec {

// Every compute unit keeps its A, B, C (with the bias) and command list
// each in an HBM bank of its own: unit u uses HBM[4u .. 4u+3], and the
// bitstream connects every memory port of unit u to those banks
// (gen_fpga_config link). The host's staging, the xrt backend's check of
// a bitstream, the card model and Makefile.fpga all take it from here.
inline constexpr uint32_t kBanksPerComputeUnit = 4;

enum class Operand : uint32_t { kA = 0, kB = 1, kC = 2, kCommands = 3 };

// The bank in which the host stages `operand` for compute unit `unit`.
constexpr uint32_t operand_bank(uint32_t unit, Operand operand, uint32_t hbm_banks) {
  return (unit * kBanksPerComputeUnit + uint32_t(operand)) % hbm_banks;
}

// The operand memory port `port` (kPortNames' order) reads or writes.
constexpr Operand port_operand(uint32_t port) {
  return port < kFirstAPort   ? Operand::kCommands
         : port < kFirstBPort ? Operand::kA
         : port < kFirstCPort ? Operand::kB
                              : Operand::kC;
}

struct Board {
  const char* name;         // what --board and BOARD= take
  const char* description;  // for help and reports
  // Vitis: the platform and the part (empty: a board only modelled).
  const char* platform;
  const char* part;
  // The card model: HBM pseudo-channels and each one's bandwidth, an idle
  // read's latency, the host link, the kernel clock the bitstream targets.
  uint32_t hbm_channels;    // 0: the co-simulation's memory (every port on its own)
  double channel_gb_per_s;  // per pseudo-channel
  double latency_ns;        // an idle read, AR to the first beat (assumed: see below)
  uint32_t latency_cycles;  // the co-simulation's memory only: in kernel cycles
  uint32_t hbm_banks;       // banks the kernels reach (kBanksPerComputeUnit per unit)
  uint32_t pcie_gen, pcie_lanes;
  double clock_mhz;
  uint32_t largest_array;  // the largest power-of-two square array that fits (the fit check)
  // The fabric, for the fit check (0 where there is no part).
  uint32_t luts, flip_flops, dsps, ultrarams;
};

// HBM: 32 pseudo-channels on each Alveo HBM card, the card's total
// bandwidth shared evenly (U55C and U280: 460 GB/s; U50: 316 GB/s). Idle
// HBM latency is assumed to be 110 ns (published microbenchmarks of the
// Alveo HBM subsystem report about 100-130 ns). Fabric: DS978 (U55C),
// DS963 (U280), DS965 (U50). The largest arrays are the fit check's, which
// fails when they are not what fits (32x32 at 54 % of a U55C's LUTs,
// within the 70 % the shell leaves; the U50's smaller fabric fits 29x29,
// so 16x16). "hypothetical" is a part large enough for
// 128x128 with a U55C's memory and host link; "hw_emu" is the
// co-simulation's memory (24 cycles, every port on its own), against which
// the model is calibrated.
inline constexpr Board kBoards[] = {
    {"u55c", "Alveo U55C (16 GiB HBM2, PCIe Gen3 x16)", "xilinx_u55c_gen3x16_xdma_3_202210_1",
     "xcu55c-fsvh2892-2L-e", 32, 460.0 / 32, 110, 0, 32, 3, 16, 300, 32, 1303680, 2607360, 9024, 960},
    {"u280", "Alveo U280 (8 GiB HBM2, PCIe Gen3 x16)", "xilinx_u280_gen3x16_xdma_1_202211_1",
     "xcu280-fsvh2892-2L-e", 32, 460.0 / 32, 110, 0, 32, 3, 16, 300, 32, 1303680, 2607360, 9024, 960},
    {"u50", "Alveo U50 (8 GiB HBM2, PCIe Gen3 x16)", "xilinx_u50_gen3x16_xdma_5_202210_1",
     "xcu50-fsvh2104-2L-e", 32, 316.0 / 32, 110, 0, 32, 3, 16, 300, 16, 872160, 1743840, 5952, 640},
    {"hypothetical", "a part that fits 128x128, with a U55C's HBM and PCIe", "", "", 32, 460.0 / 32, 110, 0,
     32, 3, 16, 300, 128, 0, 0, 0, 0},
    {"hw_emu", "the co-simulation's memory: 24 cycles, one beat per cycle per port", "", "", 0, 0, 0, 24, 32,
     3, 16, 300, 128, 0, 0, 0, 0},
};

// The board called `name`, or null.
constexpr const Board* find_board(std::string_view name) {
  for (const Board& board : kBoards)
    if (name == board.name) return &board;
  return nullptr;
}

}  // namespace systole::spec
