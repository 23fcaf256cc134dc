// SPDX-License-Identifier: Apache-2.0
// One read port as rows: each request reads bytes [addr, addr + bytes)
// (bytes <= RowBytes) through systole_dma_read and delivers them as one
// row, byte 0 being the byte at addr (row byte i at [8i +: 8]; bytes past
// the request are whatever the covering beats held, for the consumer to
// mask). Requests queue behind each other like the DMA's; rows come out in
// request order, one held at a time (valid until row_ready_i). The next
// row's first beat may arrive in the cycle the held row is taken, so a
// stream of one-beat rows runs at one row per cycle.
`include "systole_assert.svh"

module systole_row_reader #(
  parameter int unsigned RowBytes = 64,
  parameter int unsigned MaxOutstanding = 8
) (
  input  logic                   clk_i,
  input  logic                   rst_ni,
  // Requests.
  input  logic                   req_valid_i,
  output logic                   req_ready_o,
  input  systole_pkg::axi_addr_t req_addr_i,
  input  logic [31:0]            req_bytes_i,   // 1 .. RowBytes
  // Rows, in request order.
  output logic                   row_valid_o,
  input  logic                   row_ready_i,
  output logic [8*RowBytes-1:0]  row_o,
  // Nothing queued and no row held: the port is quiet.
  output logic                   idle_o,
  output logic                   error_o,
  input  logic                   clear_error_i,
  // The AXI4 port (read channels).
  output systole_pkg::axi_req_t  axi_req_o,
  input  systole_pkg::axi_rsp_t  axi_rsp_i
);
  localparam int unsigned BeatBytes = systole_pkg::BeatBytes;
  localparam int unsigned BeatBits = systole_pkg::AxiDataBits;
  localparam int unsigned BeatShift = systole_pkg::AxiBeatShift;
  localparam int unsigned SlotBits = $clog2(MaxOutstanding);
  // A row of RowBytes bytes starting anywhere in a beat covers at most
  // RowBytes / BeatBytes + 1 beats (RowBytes is a multiple of a beat or
  // smaller).
  localparam int unsigned RawBeats = (RowBytes + BeatBytes - 1) / BeatBytes + 1;
  localparam int unsigned IndexBits = RawBeats > 1 ? $clog2(RawBeats) : 1;

  logic                   beat_valid, beat_ready, beat_last, start, take, done;
  systole_pkg::axi_data_t beat;
  logic [BeatShift-1:0]   offset_q [MaxOutstanding];  // addr % BeatBytes of each queued request
  logic [SlotBits-1:0]    head_d, head_q, tail_d, tail_q;
  logic [SlotBits:0]      queued_d, queued_q;
  logic [IndexBits-1:0]   beat_index_d, beat_index_q;  // the next beat's place in raw_q
  logic [BeatBits*RawBeats-1:0] raw_q;                 // the request's beats, in order
  logic [BeatShift-1:0]   row_offset_q;                // offset of the row in raw_q
  logic                   held_d, held_q;

  systole_dma_read #(.MaxOutstanding(MaxOutstanding)) u_dma (
    .clk_i, .rst_ni,
    .req_valid_i, .req_ready_o, .req_addr_i, .req_bytes_i,
    .beat_valid_o(beat_valid), .beat_ready_i(beat_ready), .beat_o(beat), .beat_last_o(beat_last),
    .error_o, .clear_error_i, .axi_req_o, .axi_rsp_i
  );

  assign start       = req_valid_i && req_ready_o;
  assign beat_ready  = !held_q || row_ready_i;
  assign take        = beat_valid && beat_ready;
  assign done        = take && beat_last;
  assign row_valid_o = held_q;
  assign row_o       = (8*RowBytes)'(raw_q >> {row_offset_q, 3'b000});
  assign idle_o      = queued_q == '0 && !held_q;

  always_comb begin
    tail_d       = start ? tail_q + 1'b1 : tail_q;
    head_d       = done ? head_q + 1'b1 : head_q;
    queued_d     = queued_q + (SlotBits+1)'(start) - (SlotBits+1)'(done);
    beat_index_d = !take ? beat_index_q : beat_last ? '0 : beat_index_q + 1'b1;
    held_d       = done || (held_q && !row_ready_i);
  end

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      head_q       <= '0;
      tail_q       <= '0;
      queued_q     <= '0;
      beat_index_q <= '0;
      held_q       <= 1'b0;
    end else begin
      head_q       <= head_d;
      tail_q       <= tail_d;
      queued_q     <= queued_d;
      beat_index_q <= beat_index_d;
      held_q       <= held_d;
    end
  end
  // Data: qualified by queued_q and held_q, so no reset.
  always_ff @(posedge clk_i) begin
    if (start) offset_q[tail_q] <= req_addr_i[BeatShift-1:0];
    if (take) raw_q[BeatBits * beat_index_q +: BeatBits] <= beat;
    if (done) row_offset_q <= offset_q[head_q];
  end

`ifndef SYNTHESIS
  `ASSERT(a_row_fits, req_valid_i |-> req_bytes_i <= RowBytes)
  // A held row stays, unchanged, until it is taken.
  systole_hold_check #(.Width(8*RowBytes)) u_row_held (
    .clk_i, .rst_ni, .valid_i(row_valid_o), .ready_i(row_ready_i), .payload_i(row_o)
  );
`endif
endmodule
