// SPDX-License-Identifier: Apache-2.0
// The Systole kernel in HLS C++: command-list walker, DMA, and a
// weight-stationary ROWS x COLS array in a load -> compute -> store dataflow.
// This is the executable specification: the RTL and the fast sw_emu path must
// produce its bits. It builds with g++ through hls_compat.h; systole_top.cpp
// is the Vitis top function.
#pragma once

#include <cstdint>
#include <cstring>

#include "hls_compat.h"
#include "systole/descriptor.h"
#include "systole/numerics.h"
#include "systole/spec.h"
#include "systole/validate.h"
#include "systole/vector_ops.h"

namespace systole::hls_kernel {

using numerics::bf16_t;
using spec::kBeatBytes;

// One beat of an AXI4 data channel (512 bits).
struct Beat {
  uint8_t bytes[kBeatBytes];
};
static_assert(sizeof(Beat) == kBeatBytes, "a beat is the AXI data width");

// The kernel's m_axi ports (spec::kPortNames), each a view of device memory
// from its base. The ports of a group reach the same memory: which one
// carries a transfer changes its speed on a board, never a bit.
struct Ports {
  const Beat* cmd;
  const Beat* a[spec::kAPorts];
  const Beat* b[spec::kBPorts];
  Beat* c[spec::kCPorts];
};

// What a launch leaves in the result registers.
struct LaunchResult {
  spec::ErrorCode status = spec::ErrorCode::kOk;
  uint32_t error_index = 0;
  spec::PerfCounters counters;
};

// A vector crossing a stream: one array row or column of values.
template <class T, uint32_t N>
struct Lanes {
  T lane[N];
};

constexpr uint32_t ceil_div(uint32_t a, uint32_t b) { return (a + b - 1) / b; }
constexpr uint32_t min_u32(uint32_t a, uint32_t b) { return a < b ? a : b; }
constexpr uint32_t max_u32(uint32_t a, uint32_t b) { return a > b ? a : b; }

// The array's schedule without memory stalls: per (N tile, K tile) the array
// streams max(M, ROWS) rows (the next tile's ROWS weight rows shift in while
// M activation rows compute), plus ROWS + COLS cycles of fill and drain per N
// tile. sw_emu reports this as busy_cycles; hw_emu measures real cycles.
constexpr uint64_t array_schedule_cycles(const spec::GemmDescriptor& d, const spec::ArrayShape& shape) {
  const uint64_t n_tiles = ceil_div(d.n, shape.cols);
  const uint64_t k_tiles = ceil_div(d.k, shape.rows);
  return n_tiles * (k_tiles * max_u32(d.m, shape.rows) + shape.rows + shape.cols);
}

// Beats touched by a transfer of `bytes` bytes starting at `addr`.
constexpr uint64_t beats_spanned(uint64_t addr, uint64_t bytes) {
  return (addr + bytes - 1) / kBeatBytes - addr / kBeatBytes + 1;
}

// The bytes [lo, hi) of `beat` that a transfer of `bytes` bytes starting at
// `addr` covers (first and last beats are partial when unaligned).
struct BeatSpan {
  uint32_t lo, hi;
};
constexpr BeatSpan beat_span(uint64_t beat, uint64_t addr, uint32_t bytes) {
  const uint64_t first = addr / kBeatBytes, last = (addr + bytes - 1) / kBeatBytes;
  return {beat == first ? uint32_t(addr % kBeatBytes) : 0,
          beat == last ? uint32_t((addr + bytes - 1) % kBeatBytes) + 1 : kBeatBytes};
}

// ---------------------------------------------------------------------------
// DMA: whole beats on the bus, bytes in and out of on-chip buffers. Each call
// is one row of a matrix, which Vitis turns into bursts (<= 256 beats, split
// at 4 KiB boundaries by the m_axi adapter).

inline void dma_read(const Beat* port, uint64_t addr, uint32_t bytes, uint8_t* dst, uint64_t& bus_bytes) {
  const uint64_t first = addr / kBeatBytes;
  const uint64_t last = (addr + bytes - 1) / kBeatBytes;
  uint32_t out = 0;
READ_BEATS:
  for (uint64_t beat = first; beat <= last; ++beat) {
#pragma HLS PIPELINE II = 1
    const Beat word = port[beat];
    const BeatSpan span = beat_span(beat, addr, bytes);
    for (uint32_t i = span.lo; i < span.hi; ++i) dst[out++] = word.bytes[i];
  }
  bus_bytes += beats_spanned(addr, bytes) * kBeatBytes;
}

// Writes with byte strobes: bytes of a beat outside the row keep their value.
inline void dma_write(Beat* port, uint64_t addr, uint32_t bytes, const uint8_t* src, uint64_t& bus_bytes) {
  const uint64_t first = addr / kBeatBytes;
  const uint64_t last = (addr + bytes - 1) / kBeatBytes;
  uint32_t in = 0;
WRITE_BEATS:
  for (uint64_t beat = first; beat <= last; ++beat) {
#pragma HLS PIPELINE II = 1
    const BeatSpan span = beat_span(beat, addr, bytes);
    for (uint32_t i = span.lo; i < span.hi; ++i) port[beat].bytes[i] = src[in++];
  }
  bus_bytes += beats_spanned(addr, bytes) * kBeatBytes;
}

constexpr uint64_t gcd_u64(uint64_t a, uint64_t b) {
  while (b != 0) {
    const uint64_t rest = a % b;
    a = b;
    b = rest;
  }
  return a;
}

// beats_spanned summed over `count` rows of `bytes` bytes, the first at
// `addr` and each `stride` bytes after the one before. A row's beats depend
// only on where it starts within a beat, which repeats every kBeatBytes /
// gcd(stride, kBeatBytes) rows, so at most kBeatBytes rows are looked at.
constexpr uint64_t rows_beats(uint64_t addr, uint64_t stride, uint64_t count, uint64_t bytes) {
  const uint64_t period = kBeatBytes / gcd_u64(stride % kBeatBytes, kBeatBytes);
  uint64_t beats = 0;
  for (uint64_t row = 0; row < period && row < count; ++row)
    beats += beats_spanned(addr + row * stride, bytes) * ((count - row + period - 1) / period);
  return beats;
}

// Bus bytes one GEMM descriptor moves, following the access pattern of
// execute_gemm below, one row at a time (the fast sw_emu path reports this;
// a test checks that the kernel's own count agrees).
inline void add_descriptor_traffic(const spec::GemmDescriptor& d, const spec::ArrayShape& shape,
                                   spec::PerfCounters& counters) {
  using spec::kBf16Bytes;
  using spec::kFp32Bytes;
  const uint32_t c_bytes = spec::output_element_bytes(d.flags);
  for (uint32_t k0 = 0; k0 < d.k; k0 += shape.rows)
    counters.dma_read_bytes += rows_beats(d.a_addr + uint64_t(k0) * kBf16Bytes, uint64_t(d.lda) * kBf16Bytes,
                                          d.m, uint64_t(min_u32(shape.rows, d.k - k0)) * kBf16Bytes) *
                               kBeatBytes;
  for (uint32_t n0 = 0; n0 < d.n; n0 += shape.cols) {
    const uint32_t cols = min_u32(shape.cols, d.n - n0);
    counters.dma_read_bytes += rows_beats(d.b_addr + uint64_t(n0) * kBf16Bytes, uint64_t(d.ldb) * kBf16Bytes,
                                          d.k, uint64_t(cols) * kBf16Bytes) *
                               kBeatBytes;
    if (d.flags & spec::flag::kBias)
      counters.dma_read_bytes +=
          beats_spanned(d.bias_addr + uint64_t(n0) * kFp32Bytes, uint64_t(cols) * kFp32Bytes) * kBeatBytes;
    const uint64_t c_beats = rows_beats(d.c_addr + uint64_t(n0) * c_bytes, uint64_t(d.ldc) * c_bytes, d.m,
                                        uint64_t(cols) * c_bytes) *
                             kBeatBytes;
    if (d.flags & spec::flag::kAccumulate) counters.dma_read_bytes += c_beats;
    counters.dma_write_bytes += c_beats;
  }
}

// ---------------------------------------------------------------------------
// On-chip memories of one compute unit.
template <uint32_t Rows, uint32_t Cols>
struct OnChip {
  static constexpr spec::ArrayShape kShape{Rows, Cols};
  // The A block, zero-padded along K to whole K tiles.
  bf16_t activations[kShape.max_m()][kShape.max_k()];
  // fp32 partial sums of one N tile; K tiles accumulate here.
  float accumulators[kShape.max_m()][Cols];
};

// LOAD_A: the whole M x K block of A into the activation buffer, once per
// descriptor (it is reused by every N tile), in the order the array first
// consumes it: K tile by K tile, one row's K tile (ROWS values) per
// transfer, transfer i on a port i % kAPorts.
template <uint32_t Rows, uint32_t Cols>
void load_activations(const Beat* const (&a_ports)[spec::kAPorts], const spec::GemmDescriptor& d,
                      OnChip<Rows, Cols>& onchip, uint64_t& bus_bytes) {
  uint8_t chunk_bytes[Rows * sizeof(bf16_t)];
  uint32_t transfer = 0;
LOAD_A:
  for (uint32_t k0 = 0; k0 < d.k; k0 += Rows) {
    const uint32_t values = min_u32(Rows, d.k - k0);
    for (uint32_t m = 0; m < d.m; ++m, ++transfer) {
      dma_read(a_ports[transfer % spec::kAPorts], d.a_addr + (uint64_t(m) * d.lda + k0) * sizeof(bf16_t),
               values * sizeof(bf16_t), chunk_bytes, bus_bytes);
      std::memcpy(&onchip.activations[m][k0], chunk_bytes, values * sizeof(bf16_t));
    PAD_A:
      for (uint32_t k = values; k < Rows; ++k) onchip.activations[m][k0 + k] = 0;
    }
  }
}

// Streams ROWS weight rows per K tile of the N tile starting at n0,
// zero-padded past K and past N.
template <uint32_t Rows, uint32_t Cols>
void stream_weights(const Beat* const (&b_ports)[spec::kBPorts], const spec::GemmDescriptor& d, uint32_t n0,
                    hls::stream<Lanes<bf16_t, Cols>>& weights_out, uint64_t& bus_bytes) {
  const uint32_t cols = min_u32(Cols, d.n - n0);
  const uint32_t k_tiles = ceil_div(d.k, Rows);
  uint8_t row_bytes[Cols * sizeof(bf16_t)];
LOAD_B:
  for (uint32_t k = 0; k < k_tiles * Rows; ++k) {
    Lanes<bf16_t, Cols> row = {};
    if (k < d.k) {
      dma_read(b_ports[k % spec::kBPorts], d.b_addr + (uint64_t(k) * d.ldb + n0) * sizeof(bf16_t),
               cols * sizeof(bf16_t), row_bytes, bus_bytes);
      std::memcpy(row.lane, row_bytes, cols * sizeof(bf16_t));
    }
    weights_out.write(row);
  }
}

// Streams, per K tile, the M activation rows' slices of ROWS elements.
template <uint32_t Rows, uint32_t Cols>
void stream_activations(const OnChip<Rows, Cols>& onchip, const spec::GemmDescriptor& d,
                        hls::stream<Lanes<bf16_t, Rows>>& activations_out) {
  const uint32_t k_tiles = ceil_div(d.k, Rows);
FEED_A:
  for (uint32_t t = 0; t < k_tiles; ++t) {
    for (uint32_t m = 0; m < d.m; ++m) {
#pragma HLS PIPELINE II = 1
      Lanes<bf16_t, Rows> slice;
      for (uint32_t r = 0; r < Rows; ++r) slice.lane[r] = onchip.activations[m][t * Rows + r];
      activations_out.write(slice);
    }
  }
}

// The weight-stationary array. Each K tile: ROWS weight rows shift in (into
// the shadow registers, while the previous tile computes), then M activation
// rows flow through. Column c's partial sum starts at +0 in the top PE and
// each PE row r adds a[r] * w[r][c] on its way down (NUMERICS.md order).
template <uint32_t Rows, uint32_t Cols>
void systolic_array(const spec::GemmDescriptor& d, hls::stream<Lanes<bf16_t, Cols>>& weights_in,
                    hls::stream<Lanes<bf16_t, Rows>>& activations_in,
                    hls::stream<Lanes<float, Cols>>& column_sums_out) {
  bf16_t weights[Rows][Cols];
#pragma HLS ARRAY_PARTITION variable = weights complete dim = 0
  const uint32_t k_tiles = ceil_div(d.k, Rows);
TILES:
  for (uint32_t t = 0; t < k_tiles; ++t) {
  SHIFT_WEIGHTS:
    for (uint32_t r = 0; r < Rows; ++r) {
      const Lanes<bf16_t, Cols> row = weights_in.read();
      for (uint32_t c = 0; c < Cols; ++c) weights[r][c] = row.lane[c];
    }
  ROWS_OF_A:
    for (uint32_t m = 0; m < d.m; ++m) {
#pragma HLS PIPELINE II = 1
      const Lanes<bf16_t, Rows> a = activations_in.read();
      Lanes<float, Cols> sums;
    PE_COLUMNS:
      for (uint32_t c = 0; c < Cols; ++c) {
#pragma HLS UNROLL
        float partial = 0.0f;
      PE_ROWS:
        for (uint32_t r = 0; r < Rows; ++r) {
#pragma HLS UNROLL
          partial = numerics::add(partial, numerics::mul(a.lane[r], weights[r][c]));
        }
        sums.lane[c] = partial;
      }
      column_sums_out.write(sums);
    }
  }
}

// Reads one row of C (the accumulate input) in the output precision and
// canonicalises it.
template <uint32_t Cols>
void read_c_row(const Beat* c_port, uint64_t addr, uint32_t cols, bool bf16, float* out,
                uint64_t& bus_bytes) {
  uint8_t row_bytes[Cols * sizeof(float)];
  const uint32_t element_bytes = bf16 ? sizeof(bf16_t) : sizeof(float);
  dma_read(c_port, addr, cols * element_bytes, row_bytes, bus_bytes);
  for (uint32_t c = 0; c < cols; ++c) {
    if (bf16) {
      bf16_t value;
      std::memcpy(&value, row_bytes + c * sizeof(bf16_t), sizeof value);
      out[c] = numerics::bf16_to_f32(value);
    } else {
      uint32_t bits;
      std::memcpy(&bits, row_bytes + c * sizeof(float), sizeof bits);
      out[c] = numerics::f32_from_bits(numerics::f32_canonical_bits(bits));
    }
  }
}

// STORE: initialises the accumulators (C or +0), adds each K tile's column
// sums, then applies bias, ReLU and the output conversion and writes C.
template <uint32_t Rows, uint32_t Cols>
void accumulate_and_store(Beat* const (&c_ports)[spec::kCPorts], const spec::GemmDescriptor& d, uint32_t n0,
                          hls::stream<Lanes<float, Cols>>& column_sums_in, OnChip<Rows, Cols>& onchip,
                          uint64_t& read_bytes, uint64_t& write_bytes) {
  const uint32_t cols = min_u32(Cols, d.n - n0);
  const uint32_t k_tiles = ceil_div(d.k, Rows);
  const bool out_bf16 = (d.flags & spec::flag::kOutputBf16) != 0;
  const uint32_t c_bytes = spec::output_element_bytes(d.flags);
  auto c_row_addr = [&](uint32_t m) { return d.c_addr + (uint64_t(m) * d.ldc + n0) * c_bytes; };

INIT_ACC:
  for (uint32_t m = 0; m < d.m; ++m) {
    if (d.flags & spec::flag::kAccumulate) {
      read_c_row<Cols>(c_ports[m % spec::kCPorts], c_row_addr(m), cols, out_bf16, onchip.accumulators[m],
                       read_bytes);
    } else {
      for (uint32_t c = 0; c < cols; ++c) onchip.accumulators[m][c] = 0.0f;
    }
  }
ACCUMULATE:
  for (uint32_t t = 0; t < k_tiles; ++t) {
    for (uint32_t m = 0; m < d.m; ++m) {
#pragma HLS PIPELINE II = 1
      const Lanes<float, Cols> sums = column_sums_in.read();
      for (uint32_t c = 0; c < cols; ++c)
        onchip.accumulators[m][c] = numerics::add(onchip.accumulators[m][c], sums.lane[c]);
    }
  }

  float bias[Cols];
  if (d.flags & spec::flag::kBias) {
    uint8_t bias_bytes[Cols * sizeof(float)];
    dma_read(c_ports[0], d.bias_addr + uint64_t(n0) * sizeof(float), cols * sizeof(float), bias_bytes,
             read_bytes);
    for (uint32_t c = 0; c < cols; ++c) {
      uint32_t bits;
      std::memcpy(&bits, bias_bytes + c * sizeof(float), sizeof bits);
      bias[c] = numerics::f32_from_bits(numerics::f32_canonical_bits(bits));
    }
  }
  uint8_t row_bytes[Cols * sizeof(float)];
STORE_C:
  for (uint32_t m = 0; m < d.m; ++m) {
    for (uint32_t c = 0; c < cols; ++c) {
      float value = onchip.accumulators[m][c];
      if (d.flags & spec::flag::kBias) value = numerics::add(value, bias[c]);
      if (d.flags & spec::flag::kRelu) value = numerics::relu(value);
      if (out_bf16) {
        const bf16_t out = numerics::f32_to_bf16(value);
        std::memcpy(row_bytes + c * sizeof(bf16_t), &out, sizeof out);
      } else {
        std::memcpy(row_bytes + c * sizeof(float), &value, sizeof value);
      }
    }
    dma_write(c_ports[m % spec::kCPorts], c_row_addr(m), cols * c_bytes, row_bytes, write_bytes);
  }
}

// One validated GEMM descriptor.
template <uint32_t Rows, uint32_t Cols>
void execute_gemm(const Ports& ports, const spec::GemmDescriptor& d, OnChip<Rows, Cols>& onchip,
                  spec::PerfCounters& counters) {
  load_activations(ports.a, d, onchip, counters.dma_read_bytes);
N_TILES:
  for (uint32_t n0 = 0; n0 < d.n; n0 += Cols) {
#pragma HLS DATAFLOW
    hls::stream<Lanes<bf16_t, Cols>> weights("weights");
    hls::stream<Lanes<bf16_t, Rows>> activations("activations");
    hls::stream<Lanes<float, Cols>> column_sums("column_sums");
    stream_weights<Rows, Cols>(ports.b, d, n0, weights, counters.dma_read_bytes);
    stream_activations(onchip, d, activations);
    systolic_array<Rows, Cols>(d, weights, activations, column_sums);
    accumulate_and_store(ports.c, d, n0, column_sums, onchip, counters.dma_read_bytes,
                         counters.dma_write_bytes);
  }
  counters.macs += uint64_t(d.m) * d.n * d.k;
  counters.busy_cycles += array_schedule_cycles(d, OnChip<Rows, Cols>::kShape);
}

// ---------------------------------------------------------------------------
// The vector engine: fp32 elementwise operations (NUMERICS.md, "The vector
// engine"), a block of kVectorBlock elements at a time. x arrives on the a
// ports; y, z and w are read and written on c ports 0, 1 and 2. Every input
// of a block is read before any of its outputs is written, which is what
// makes an output that is the same buffer as an input well defined.
inline constexpr uint32_t kVectorBlock = spec::kVectorBlockElements;
inline constexpr uint32_t kVectorLanes = spec::kVectorLanes;  // a beat of fp32 values

// The engine's schedule without memory stalls: one beat (kVectorLanes
// elements) of every operand per cycle, rows times over for sum and
// to_bf16.
constexpr uint64_t vector_schedule_cycles(const spec::VectorDescriptor& d) {
  const uint64_t passes = spec::vector_reads_rows(spec::Opcode(d.opcode)) ? d.rows : 1;
  return passes * ceil_div(d.n, kVectorLanes);
}

// `count` fp32 values at `addr`, canonicalised as they are read.
inline void read_vector(const Beat* port, uint64_t addr, uint32_t count, float* out, uint64_t& bus_bytes) {
  uint8_t bytes[kVectorBlock * sizeof(float)];
  dma_read(port, addr, count * uint32_t(sizeof(float)), bytes, bus_bytes);
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t bits;
    std::memcpy(&bits, bytes + i * sizeof(float), sizeof bits);
    out[i] = numerics::f32_from_bits(numerics::f32_canonical_bits(bits));
  }
}

// `count` fp32 values to `addr`, canonicalised as they are written (a NaN
// result of the arithmetic becomes the canonical NaN here).
inline void write_vector(Beat* port, uint64_t addr, uint32_t count, const float* in, uint64_t& bus_bytes) {
  uint8_t bytes[kVectorBlock * sizeof(float)];
  for (uint32_t i = 0; i < count; ++i) {
    const uint32_t bits = numerics::f32_canonical_bits(numerics::f32_bits(in[i]));
    std::memcpy(bytes + i * sizeof(float), &bits, sizeof bits);
  }
  dma_write(port, addr, count * uint32_t(sizeof(float)), bytes, bus_bytes);
}

// to_bf16: x's rows rounded to bf16 (f32_to_bf16, as the host rounds
// operands), written packed on c port 1, or transposed. Transposed,
// kTransposeRows rows are converted together, so that each column's values
// for those rows leave as one whole beat.
using spec::kTransposeRows;

inline void execute_to_bf16(const Ports& ports, const spec::VectorDescriptor& d,
                            spec::PerfCounters& counters) {
  const bool transpose = (d.flags & spec::vector_flag::kTranspose) != 0;
  const uint32_t group = transpose ? kTransposeRows : 1;
  float x[kTransposeRows][kVectorBlock];
  bf16_t out[kTransposeRows][kVectorBlock];
  uint8_t bytes[kVectorBlock * sizeof(bf16_t)];
  uint32_t transfer = 0;
ROW_GROUPS:
  for (uint32_t r0 = 0; r0 < d.rows; r0 += group) {
    const uint32_t rows = min_u32(group, d.rows - r0);
  BLOCKS:
    for (uint32_t i0 = 0; i0 < d.n; i0 += kVectorBlock) {
      const uint32_t count = min_u32(kVectorBlock, d.n - i0);
      for (uint32_t r = 0; r < rows; ++r, ++transfer) {
        const uint64_t row = d.x_addr + (uint64_t(r0 + r) * d.stride + i0) * sizeof(float);
        read_vector(ports.a[transfer % spec::kAPorts], row, count, x[r], counters.dma_read_bytes);
        numerics::f32_to_bf16_array(x[r], out[r], count);
      }
      if (!transpose) {
        std::memcpy(bytes, out[0], count * sizeof(bf16_t));
        dma_write(ports.c[1], d.z_addr + (uint64_t(r0) * d.n + i0) * sizeof(bf16_t),
                  count * uint32_t(sizeof(bf16_t)), bytes, counters.dma_write_bytes);
        continue;
      }
      for (uint32_t c = 0; c < count; ++c) {
        for (uint32_t r = 0; r < rows; ++r)
          std::memcpy(bytes + r * sizeof(bf16_t), &out[r][c], sizeof(bf16_t));
        dma_write(ports.c[1], d.z_addr + (uint64_t(i0 + c) * d.rows + r0) * sizeof(bf16_t),
                  rows * uint32_t(sizeof(bf16_t)), bytes, counters.dma_write_bytes);
      }
    }
  }
  counters.busy_cycles += vector_schedule_cycles(d);
}

// Bus bytes one vector descriptor moves, following execute_vector's and
// execute_to_bf16's requests (the fast sw_emu path reports this; a test
// checks that both engines count the same).
inline void add_vector_traffic(const spec::VectorDescriptor& d, spec::PerfCounters& counters) {
  const spec::Opcode op = spec::Opcode(d.opcode);
  auto read = [&](uint64_t addr, uint64_t bytes) {
    counters.dma_read_bytes += beats_spanned(addr, bytes) * kBeatBytes;
  };
  auto write = [&](uint64_t addr, uint64_t bytes) {
    counters.dma_write_bytes += beats_spanned(addr, bytes) * kBeatBytes;
  };
  const bool transpose = op == spec::Opcode::kToBf16 && (d.flags & spec::vector_flag::kTranspose) != 0;
  if (op == spec::Opcode::kToBf16) {
    const uint32_t group = transpose ? kTransposeRows : 1;
    for (uint32_t r0 = 0; r0 < d.rows; r0 += group) {
      const uint32_t rows = min_u32(group, d.rows - r0);
      for (uint32_t i0 = 0; i0 < d.n; i0 += kVectorBlock) {
        const uint32_t count = min_u32(kVectorBlock, d.n - i0);
        for (uint32_t r = 0; r < rows; ++r)
          read(d.x_addr + (uint64_t(r0 + r) * d.stride + i0) * 4, count * 4);
        if (!transpose) {
          write(d.z_addr + (uint64_t(r0) * d.n + i0) * 2, count * 2);
          continue;
        }
        for (uint32_t c = 0; c < count; ++c) write(d.z_addr + (uint64_t(i0 + c) * d.rows + r0) * 2, rows * 2);
      }
    }
    return;
  }
  const spec::VectorOperands operands = spec::vector_operands(op);
  const spec::VectorScalars scalars = spec::VectorScalars::of(d);
  const uint64_t addr[4] = {d.x_addr, d.y_addr, d.z_addr, d.w_addr};
  for (uint32_t i0 = 0; i0 < d.n; i0 += kVectorBlock) {
    const uint64_t at = uint64_t(i0) * 4, bytes = uint64_t(min_u32(kVectorBlock, d.n - i0)) * 4;
    if (op == spec::Opcode::kSum) {
      for (uint32_t r = 0; r < d.rows; ++r) read(d.x_addr + uint64_t(r) * d.stride * 4 + at, bytes);
      write(d.z_addr + at, bytes);
      continue;
    }
    read(d.x_addr + at, bytes);
    for (int j = 1; j < 4; ++j)
      if (operands.read[j] && (j != 1 || scalars.reads_y(op))) read(addr[j] + at, bytes);
    for (int j = 1; j < 4; ++j)
      if (operands.written[j]) write(addr[j] + at, bytes);
  }
}

// One validated vector descriptor.
inline void execute_vector(const Ports& ports, const spec::VectorDescriptor& d,
                           spec::PerfCounters& counters) {
  const spec::Opcode op = spec::Opcode(d.opcode);
  if (op == spec::Opcode::kToBf16) {
    execute_to_bf16(ports, d, counters);
    return;
  }
  const spec::FlushToZero flush_to_zero;  // the engine's arithmetic (vector_ops.h)
  const spec::VectorOperands operands = spec::vector_operands(op);
  const spec::VectorScalars scalars = spec::VectorScalars::of(d);
  const uint64_t addr[4] = {d.x_addr, d.y_addr, d.z_addr, d.w_addr};
  uint64_t& read_bytes = counters.dma_read_bytes;
  uint64_t& write_bytes = counters.dma_write_bytes;
  float x[kVectorBlock], v[3][kVectorBlock];  // v: y, z, w
  uint32_t transfer = 0;
BLOCKS:
  for (uint32_t i0 = 0; i0 < d.n; i0 += kVectorBlock) {
    const uint32_t count = min_u32(kVectorBlock, d.n - i0);
    auto at = [&](uint64_t base) { return base + uint64_t(i0) * sizeof(float); };
    if (op == spec::Opcode::kSum) {
      for (uint32_t i = 0; i < count; ++i) v[1][i] = 0.0f;
    SUM_ROWS:
      for (uint32_t r = 0; r < d.rows; ++r, ++transfer) {
        read_vector(ports.a[transfer % spec::kAPorts], at(d.x_addr + uint64_t(r) * d.stride * sizeof(float)),
                    count, x, read_bytes);
        for (uint32_t i = 0; i < count; ++i) v[1][i] = spec::vector_math::add(v[1][i], x[i]);
      }
      write_vector(ports.c[1], at(d.z_addr), count, v[1], write_bytes);
      continue;
    }
    read_vector(ports.a[transfer++ % spec::kAPorts], at(d.x_addr), count, x, read_bytes);
    for (int j = 0; j < 3; ++j)
      if (operands.read[1 + j] && (j != 0 || scalars.reads_y(op)))
        read_vector(ports.c[j], at(addr[1 + j]), count, v[j], read_bytes);
    spec::vector_block(op, scalars, count, x, v[0], v[1], v[2]);
    for (int j = 0; j < 3; ++j)
      if (operands.written[1 + j]) write_vector(ports.c[j], at(addr[1 + j]), count, v[j], write_bytes);
  }
  counters.busy_cycles += vector_schedule_cycles(d);
}

// Fetches and validates the whole command list, then executes it. Nothing is
// written unless every descriptor is valid. `gemm` runs one GEMM descriptor
// and `vector` one vector descriptor, each adding to the counters (the HLS
// kernel passes execute_gemm and execute_vector, the fast sw_emu path its
// own engines). So every model shares the fetch, the validation and the
// accounting of the list itself. `shape.features` says whether the vector
// engine is there. `reachable(record)` says whether a valid descriptor's
// operands lie where the model's ports reach (kAddressOutOfRange if not):
// everywhere below mem_bytes for the kernel; the fast sw_emu engine's
// address space has a gap between its banks and the host memory it may
// reach.
struct AllReachable {
  bool operator()(const uint8_t*) const { return true; }
};

template <class ExecuteGemm, class ExecuteVector, class Reachable = AllReachable>
LaunchResult run_command_list(const Ports& ports, uint64_t mem_bytes, const spec::ArrayShape& shape,
                              ExecuteGemm&& gemm, ExecuteVector&& vector, Reachable&& reachable = {}) {
  LaunchResult result;
  spec::PerfCounters& counters = result.counters;
  const Beat* cmd_port = ports.cmd;
  const auto header = spec::decode<spec::CommandListHeader>(cmd_port[0].bytes);
  counters.dma_read_bytes += kBeatBytes;
  result.status = spec::validate_header(header, shape);
  if (result.status != spec::ErrorCode::kOk) {
    result.error_index = spec::kHeaderErrorIndex;
    return result;
  }
VALIDATE:
  for (uint32_t i = 0; i < header.count; ++i) {
    counters.dma_read_bytes += kBeatBytes;
    result.status = spec::validate_record(cmd_port[1 + i].bytes, mem_bytes, shape);
    // In validation's order: after the address ranges only the overlap of
    // a vector descriptor's buffers is checked.
    const bool ranges_checked =
        result.status == spec::ErrorCode::kOk || result.status == spec::ErrorCode::kOverlappingBuffers;
    if (ranges_checked && !reachable(cmd_port[1 + i].bytes))
      result.status = spec::ErrorCode::kAddressOutOfRange;
    if (result.status != spec::ErrorCode::kOk) {
      result.error_index = i;
      return result;
    }
  }
EXECUTE:
  for (uint32_t i = 0; i < header.count; ++i) {
    const uint8_t* record = cmd_port[1 + i].bytes;
    counters.dma_read_bytes += kBeatBytes;
    if (spec::is_vector_opcode(record[0]))
      vector(spec::decode<spec::VectorDescriptor>(record), counters);
    else
      gemm(spec::decode<spec::GemmDescriptor>(record), counters);
    ++counters.descriptors_done;
  }
  return result;
}

// The kernel: runs a command list on an array of Rows x Cols PEs, with the
// vector engine unless `features` leaves it out (the RTL's tests compare
// with a kernel that has only what the RTL has).
template <uint32_t Rows, uint32_t Cols>
LaunchResult systole_kernel(const Ports& ports, uint64_t mem_bytes, OnChip<Rows, Cols>& onchip,
                            uint32_t features = spec::feature::kAll) {
  spec::ArrayShape shape = OnChip<Rows, Cols>::kShape;
  shape.features = features;
  return run_command_list(
      ports, mem_bytes, shape,
      [&](const spec::GemmDescriptor& d, spec::PerfCounters& counters) {
        execute_gemm(ports, d, onchip, counters);
      },
      [&](const spec::VectorDescriptor& d, spec::PerfCounters& counters) {
        execute_vector(ports, d, counters);
      });
}

// Every port at the address base[p] (spec::kPortNames order) of `memory`.
inline Ports ports_at(uint8_t* memory, const uint64_t (&base)[spec::kMemoryPorts]) {
  auto at = [&](uint32_t port) { return reinterpret_cast<Beat*>(memory + base[port]); };
  Ports ports{};
  ports.cmd = at(0);
  for (uint32_t p = 0; p < spec::kAPorts; ++p) ports.a[p] = at(spec::kFirstAPort + p);
  for (uint32_t p = 0; p < spec::kBPorts; ++p) ports.b[p] = at(spec::kFirstBPort + p);
  for (uint32_t p = 0; p < spec::kCPorts; ++p) ports.c[p] = at(spec::kFirstCPort + p);
  return ports;
}

}  // namespace systole::hls_kernel
