// Vitis HLS top function of the Systole kernel (v++ -c -k systole_top). The
// array size is fixed at build time by SYSTOLE_ROWS / SYSTOLE_COLS. Register
// offsets are pinned to hw/spec/systole/spec.h with `offset=`; the map that
// Vitis generates must be checked against spec.h (it has not been run through
// Vitis here: see README, "What has not run").
#include "systole_kernel.h"

#ifndef SYSTOLE_ROWS
#define SYSTOLE_ROWS 128
#endif
#ifndef SYSTOLE_COLS
#define SYSTOLE_COLS 128
#endif

using systole::hls_kernel::Beat;

extern "C" void systole_top(const Beat* cmd, const Beat* a, const Beat* b,
                            Beat* c, uint64_t mem_bytes, uint32_t* status,
                            uint32_t* error_index, uint32_t* descriptors_done,
                            uint64_t* busy_cycles, uint64_t* macs,
                            uint64_t* dma_read_bytes, uint64_t* dma_write_bytes,
                            uint64_t* stall_cycles) {
#pragma HLS INTERFACE mode = m_axi port = cmd bundle = gmem_cmd offset = slave max_read_burst_length = 16
#pragma HLS INTERFACE mode = m_axi port = a bundle = gmem_a offset = slave max_read_burst_length = 256 num_read_outstanding = 8
#pragma HLS INTERFACE mode = m_axi port = b bundle = gmem_b offset = slave max_read_burst_length = 256 num_read_outstanding = 8
#pragma HLS INTERFACE mode = m_axi port = c bundle = gmem_c offset = slave max_read_burst_length = 256 max_write_burst_length = 256 num_write_outstanding = 8
#pragma HLS INTERFACE mode = s_axilite port = cmd offset = 0x10
#pragma HLS INTERFACE mode = s_axilite port = a offset = 0x18
#pragma HLS INTERFACE mode = s_axilite port = b offset = 0x20
#pragma HLS INTERFACE mode = s_axilite port = c offset = 0x28
#pragma HLS INTERFACE mode = s_axilite port = mem_bytes offset = 0x30
#pragma HLS INTERFACE mode = s_axilite port = status offset = 0x40
#pragma HLS INTERFACE mode = s_axilite port = error_index offset = 0x44
#pragma HLS INTERFACE mode = s_axilite port = descriptors_done offset = 0x48
#pragma HLS INTERFACE mode = s_axilite port = busy_cycles offset = 0x50
#pragma HLS INTERFACE mode = s_axilite port = macs offset = 0x58
#pragma HLS INTERFACE mode = s_axilite port = dma_read_bytes offset = 0x60
#pragma HLS INTERFACE mode = s_axilite port = dma_write_bytes offset = 0x68
#pragma HLS INTERFACE mode = s_axilite port = stall_cycles offset = 0x70
#pragma HLS INTERFACE mode = s_axilite port = return
  static_assert(SYSTOLE_ROWS >= 1 && SYSTOLE_COLS >= 1, "array is empty");
  static systole::hls_kernel::OnChip<SYSTOLE_ROWS, SYSTOLE_COLS> onchip;
  const systole::hls_kernel::LaunchResult result =
      systole::hls_kernel::systole_kernel(cmd, a, b, c, mem_bytes, onchip);
  *status = static_cast<uint32_t>(result.status);
  *error_index = result.error_index;
  *descriptors_done = result.counters.descriptors_done;
  *busy_cycles = result.counters.busy_cycles;
  *macs = result.counters.macs;
  *dma_read_bytes = result.counters.dma_read_bytes;
  *dma_write_bytes = result.counters.dma_write_bytes;
  *stall_cycles = result.counters.stall_cycles;
}
