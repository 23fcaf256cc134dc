// SPDX-License-Identifier: Apache-2.0
// The address side of a DMA request, shared by the read and write DMAs:
// INCR bursts of whole beats, each at most MaxBurstBeats and never across
// an AxiBoundaryBytes (4 KiB) boundary, with at most MaxOutstanding bursts
// awaiting completion (RLAST or a B response). It asks while the current
// request has beats left to ask for (none after reset); the DMAs start a
// request only once the previous one is all asked.
`include "systole_assert.svh"

module systole_dma_bursts #(
  parameter int unsigned MaxOutstanding = 8,
  localparam int unsigned CountBits = $clog2(MaxOutstanding + 1),
  localparam int unsigned BeatShift = systole_pkg::AxiBeatShift,
  localparam int unsigned BeatIndexBits = systole_pkg::AxiAddrBits - BeatShift
) (
  input  logic                      clk_i,
  input  logic                      rst_ni,
  // A new request: its first beat index and its number of beats.
  input  logic                      start_i,
  input  logic [BeatIndexBits-1:0]  first_beat_i,
  input  logic [31:0]               beats_i,
  input  logic                      burst_done_i,   // one burst has completed
  output logic                      asked_all_o,    // every beat has been requested
  output logic [CountBits-1:0]      outstanding_o,
  // The AXI4 address channel (AR or AW).
  output logic                      valid_o,
  input  logic                      ready_i,
  output systole_pkg::axi_ax_t ax_o
);
  localparam int unsigned PageBeats = systole_pkg::AxiBoundaryBytes / systole_pkg::BeatBytes;
  localparam int unsigned PageBits = $clog2(PageBeats);
  localparam int unsigned MaxBeats = systole_pkg::MaxBurstBeats < PageBeats ?
                                     systole_pkg::MaxBurstBeats : PageBeats;

  logic [BeatIndexBits-1:0] next_beat_d, next_beat_q;
  logic [31:0]              beats_to_ask_d, beats_to_ask_q, room, burst_beats;
  logic [CountBits-1:0]     outstanding_d, outstanding_q;
  logic                     fire;

  // Beats up to the next page boundary, and the next burst's length.
  assign room = 32'(PageBeats) - 32'(next_beat_q[PageBits-1:0]);
  always_comb begin
    burst_beats = beats_to_ask_q;
    if (burst_beats > room) burst_beats = room;
    if (burst_beats > MaxBeats) burst_beats = MaxBeats;
  end

  assign asked_all_o   = beats_to_ask_q == '0;
  assign outstanding_o = outstanding_q;
  assign valid_o       = !asked_all_o && outstanding_q != CountBits'(MaxOutstanding);
  assign ax_o.addr     = {next_beat_q, {BeatShift{1'b0}}};
  assign ax_o.len      = 8'(burst_beats - 32'd1);
  assign ax_o.size     = 3'(BeatShift);
  assign ax_o.burst    = systole_pkg::AxiBurstIncr;
  assign fire          = valid_o && ready_i;

  always_comb begin
    next_beat_d    = next_beat_q;
    beats_to_ask_d = beats_to_ask_q;
    outstanding_d  = outstanding_q + CountBits'(fire) - CountBits'(burst_done_i);
    if (start_i) begin
      next_beat_d    = first_beat_i;
      beats_to_ask_d = beats_i;
    end else if (fire) begin
      next_beat_d    = next_beat_q + BeatIndexBits'(burst_beats);
      beats_to_ask_d = beats_to_ask_q - burst_beats;
    end
  end

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      next_beat_q    <= '0;
      beats_to_ask_q <= '0;
      outstanding_q  <= '0;
    end else begin
      next_beat_q    <= next_beat_d;
      beats_to_ask_q <= beats_to_ask_d;
      outstanding_q  <= outstanding_d;
    end
  end

`ifndef SYNTHESIS
  // A request asks for at least one beat, and only once the previous one
  // is all asked.
  `ASSERT(a_request_beats, start_i |-> beats_i != '0 && asked_all_o)
  // An address held until it is taken does not change.
  systole_hold_check #(.Width($bits(systole_pkg::axi_ax_t))) u_address_held (
    .clk_i, .rst_ni, .valid_i(valid_o), .ready_i, .payload_i(ax_o)
  );
  // A burst stays inside one page and inside the burst-length limit.
  `ASSERT(a_no_page_crossing, valid_o |-> 32'(next_beat_q[PageBits-1:0]) + 32'(ax_o.len) < PageBeats)
  // Completions never outnumber the bursts asked for.
  `ASSERT(a_completion_counted, burst_done_i |-> outstanding_q != '0)
`endif
endmodule
