// SPDX-License-Identifier: Apache-2.0
// Vitis HLS top function of the Systole kernel (v++ -c -k systole_top). The
// array size is fixed at build time by SYSTOLE_ROWS / SYSTOLE_COLS. The
// parameters follow spec::kKernelArgs, so xrt::kernel argument i is the
// same argument for this kernel and the RTL one. Their register offsets are
// Vitis's choice (the kernel flow assigns them, and every output scalar
// gets a control word after its data), not hw/spec's map: the xrt backend
// looks them up in the xclbin by name. The identification outputs are
// written on every launch, so a host reads them after a first launch. This
// file has not been through Vitis here (README, "What has not run").
#include "systole_kernel.h"

#ifndef SYSTOLE_ROWS
#define SYSTOLE_ROWS 128
#endif
#ifndef SYSTOLE_COLS
#define SYSTOLE_COLS 128
#endif

using systole::hls_kernel::Beat;

extern "C" void systole_top(const Beat* cmd, const Beat* a0, const Beat* a1, const Beat* a2, const Beat* a3,
                            const Beat* b0, const Beat* b1, Beat* c0, Beat* c1, Beat* c2, Beat* c3,
                            uint64_t mem_bytes, uint32_t* status, uint32_t* error_index,
                            uint32_t* descriptors_done, uint64_t* busy_cycles, uint64_t* macs,
                            uint64_t* dma_read_bytes, uint64_t* dma_write_bytes, uint64_t* stall_cycles,
                            uint32_t* id, uint32_t* version, uint32_t* array_rows, uint32_t* array_cols,
                            uint32_t* max_m, uint32_t* max_n, uint32_t* max_k, uint32_t* beat_bytes,
                            uint32_t* max_descriptors, uint32_t* features) {
#pragma HLS INTERFACE mode = m_axi port = cmd bundle = gmem_cmd offset = slave max_read_burst_length = 16
#pragma HLS INTERFACE mode = m_axi port = a0 bundle = gmem_a0 offset = slave num_read_outstanding = 8
#pragma HLS INTERFACE mode = m_axi port = a1 bundle = gmem_a1 offset = slave num_read_outstanding = 8
#pragma HLS INTERFACE mode = m_axi port = a2 bundle = gmem_a2 offset = slave num_read_outstanding = 8
#pragma HLS INTERFACE mode = m_axi port = a3 bundle = gmem_a3 offset = slave num_read_outstanding = 8
#pragma HLS INTERFACE mode = m_axi port = b0 bundle = gmem_b0 offset = slave num_read_outstanding = 8
#pragma HLS INTERFACE mode = m_axi port = b1 bundle = gmem_b1 offset = slave num_read_outstanding = 8
#pragma HLS INTERFACE mode = m_axi port = c0 bundle = gmem_c0 offset = slave num_write_outstanding = 8
#pragma HLS INTERFACE mode = m_axi port = c1 bundle = gmem_c1 offset = slave num_write_outstanding = 8
#pragma HLS INTERFACE mode = m_axi port = c2 bundle = gmem_c2 offset = slave num_write_outstanding = 8
#pragma HLS INTERFACE mode = m_axi port = c3 bundle = gmem_c3 offset = slave num_write_outstanding = 8
#pragma HLS INTERFACE mode = s_axilite port = mem_bytes
#pragma HLS INTERFACE mode = s_axilite port = status
#pragma HLS INTERFACE mode = s_axilite port = error_index
#pragma HLS INTERFACE mode = s_axilite port = descriptors_done
#pragma HLS INTERFACE mode = s_axilite port = busy_cycles
#pragma HLS INTERFACE mode = s_axilite port = macs
#pragma HLS INTERFACE mode = s_axilite port = dma_read_bytes
#pragma HLS INTERFACE mode = s_axilite port = dma_write_bytes
#pragma HLS INTERFACE mode = s_axilite port = stall_cycles
#pragma HLS INTERFACE mode = s_axilite port = id
#pragma HLS INTERFACE mode = s_axilite port = version
#pragma HLS INTERFACE mode = s_axilite port = array_rows
#pragma HLS INTERFACE mode = s_axilite port = array_cols
#pragma HLS INTERFACE mode = s_axilite port = max_m
#pragma HLS INTERFACE mode = s_axilite port = max_n
#pragma HLS INTERFACE mode = s_axilite port = max_k
#pragma HLS INTERFACE mode = s_axilite port = beat_bytes
#pragma HLS INTERFACE mode = s_axilite port = max_descriptors
#pragma HLS INTERFACE mode = s_axilite port = features
#pragma HLS INTERFACE mode = s_axilite port = return
  constexpr systole::spec::ArrayShape shape{SYSTOLE_ROWS, SYSTOLE_COLS};
  *id = systole::spec::kDeviceId;
  *version = systole::spec::kVersion;
  *array_rows = shape.rows;
  *array_cols = shape.cols;
  *max_m = shape.max_m();
  *max_n = shape.max_n();
  *max_k = shape.max_k();
  *beat_bytes = systole::spec::kBeatBytes;
  *max_descriptors = shape.max_descriptors();
  *features = systole::spec::feature::kAll;
  static_assert(SYSTOLE_ROWS >= 1 && SYSTOLE_COLS >= 1, "array is empty");
  static systole::hls_kernel::OnChip<SYSTOLE_ROWS, SYSTOLE_COLS> onchip;
  static_assert(systole::spec::kAPorts == 4 && systole::spec::kBPorts == 2 && systole::spec::kCPorts == 4,
                "the m_axi arguments above are the spec's ports");
  const systole::hls_kernel::Ports ports{cmd, {a0, a1, a2, a3}, {b0, b1}, {c0, c1, c2, c3}};
  const systole::hls_kernel::LaunchResult result =
      systole::hls_kernel::systole_kernel(ports, mem_bytes, onchip);
  *status = static_cast<uint32_t>(result.status);
  *error_index = result.error_index;
  *descriptors_done = result.counters.descriptors_done;
  *busy_cycles = result.counters.busy_cycles;
  *macs = result.counters.macs;
  *dma_read_bytes = result.counters.dma_read_bytes;
  *dma_write_bytes = result.counters.dma_write_bytes;
  *stall_cycles = result.counters.stall_cycles;
}
