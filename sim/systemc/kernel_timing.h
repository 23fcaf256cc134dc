// SPDX-License-Identifier: Apache-2.0
// The RTL kernel's timing without its data: a cycle-by-cycle model of
// hw/rtl/systole_kernel.sv's controller (the front FSM and the load, init,
// weight, stream and write-back engines), its striped port groups, row
// readers and writers and DMAs (request queues,
// bursts of at most 256 beats that never cross 4 KiB, 8 outstanding) and
// the core's latency, with the same handshakes, in the same cycles. Memory
// answers through BurstMemory: IdealPortMemory is hw_emu's HBM model (a
// fixed latency, one beat per cycle on each port); the board model in
// card.h puts the bursts on HBM pseudo-channels instead.
//
// It computes no values, so it runs at tens of millions of cycles per
// second where the Verilated 128x128 kernel runs at thousands. The
// calibration test runs the same command lists through both; a change to
// the RTL's controller that this model does not follow shows there.
#pragma once

#include <cstdint>
#include <vector>

#include "systole/descriptor.h"
#include "systole/spec.h"

namespace systole::timing {

// The memory behind the kernel's AXI ports. Cycles count kernel clock
// cycles from the start of the launch.
class BurstMemory {
 public:
  virtual ~BurstMemory() = default;
  // A read burst of `beats` beats at `address` was asked for (AR handshake)
  // in `cycle`: the first cycle its first beat may be on the R channel (the
  // rest follow one per cycle as the port takes them).
  virtual uint64_t read_burst(uint64_t cycle, uint64_t address, uint32_t beats) = 0;
  // The last W beat of a write burst was taken in `cycle`: the first cycle
  // its B response may be on the bus.
  virtual uint64_t write_burst(uint64_t cycle, uint64_t address, uint32_t beats) = 0;
};

// hw_emu's memory (sim/axi_read_memory.h, sim/axi_write_memory.h, with no
// back-pressure): every port on its own, `latency` cycles from the AR
// handshake to the first beat and from the last W beat to the response.
class IdealPortMemory final : public BurstMemory {
 public:
  explicit IdealPortMemory(uint32_t latency_cycles) : latency_(latency_cycles) {}
  uint64_t read_burst(uint64_t cycle, uint64_t, uint32_t) override { return cycle + 1 + latency_; }
  uint64_t write_burst(uint64_t cycle, uint64_t, uint32_t) override { return cycle + 1 + latency_; }

 private:
  uint32_t latency_;
};

// What a launch did: the kernel's performance counters as the RTL counts
// them, and how many cycles the array computed.
struct LaunchTiming {
  spec::ErrorCode status = spec::ErrorCode::kOk;
  uint32_t error_index = 0;
  spec::PerfCounters counters;  // busy_cycles from ap_start to ap_done
  uint64_t array_cycles = 0;    // cycles an activation row entered the array
};

// The addresses the launch's ports see (the kernel's arguments).
struct LaunchArguments {
  uint64_t base[spec::kMemoryPorts] = {};  // port p's base (spec::kPortNames)
  uint64_t mem_bytes = 0;
  // Port cmd's argument is the command list's address.
  uint64_t command_addr() const { return base[0]; }
};

// Runs one launch on an array of `shape` of the command list `list`
// (`list_bytes` long: the header and its descriptors, as the kernel reads
// them from `arguments.command_addr()`), checked as the kernel checks it
// (header first, then every descriptor before any runs), then executed.
// The operands' values do not change the timing, so only the list is read.
LaunchTiming simulate_launch(spec::ArrayShape shape, const uint8_t* list, uint64_t list_bytes,
                             const LaunchArguments& arguments, BurstMemory& memory);

}  // namespace systole::timing
