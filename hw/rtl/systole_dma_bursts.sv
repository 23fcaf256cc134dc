// SPDX-License-Identifier: Apache-2.0
// The address side of a DMA request, shared by the read and write DMAs:
// INCR bursts of whole 64-byte beats, each at most 256 beats and never
// across a 4 KiB boundary (so at most 64 beats at this data width), with at
// most MaxOutstanding bursts awaiting completion (RLAST or a B response).
// It asks while the current request has beats left to ask for (none after
// reset); the DMAs start a request only once the previous one is all asked.
module systole_dma_bursts #(
  parameter int unsigned MaxOutstanding = 8,
  localparam int unsigned CountBits = $clog2(MaxOutstanding + 1)
) (
  input  logic        clk_i,
  input  logic        rst_ni,
  // A new request: its first beat index and its number of beats.
  input  logic        start_i,
  input  logic [57:0] first_beat_i,
  input  logic [31:0] beats_i,
  input  logic        burst_done_i,   // one burst has completed
  output logic        asked_all_o,    // every beat has been requested
  output logic [CountBits-1:0] outstanding_o,
  // AXI4 address channel (AR or AW).
  output logic        valid_o,
  input  logic        ready_i,
  output logic [63:0] addr_o,
  output logic [7:0]  len_o,
  output logic [2:0]  size_o,
  output logic [1:0]  burst_o
);
  localparam int unsigned BeatShift = $clog2(systole_pkg::BeatBytes);
  localparam int unsigned PageBeats = systole_pkg::AxiBoundaryBytes / systole_pkg::BeatBytes;
  localparam int unsigned MaxBeats = systole_pkg::MaxBurstBeats < PageBeats ?
                                     systole_pkg::MaxBurstBeats : PageBeats;

  logic [57:0] next_beat_q;
  logic [31:0] beats_to_ask_q, room, burst_beats;
  logic        fire;

  // Beats up to the next 4 KiB boundary, and the next burst's length.
  assign room = 32'(PageBeats) - 32'(next_beat_q[$clog2(PageBeats)-1:0]);
  always_comb begin
    burst_beats = beats_to_ask_q;
    if (burst_beats > room) burst_beats = room;
    if (burst_beats > MaxBeats) burst_beats = MaxBeats;
  end

  assign asked_all_o = beats_to_ask_q == '0;
  assign valid_o = !asked_all_o && outstanding_o != CountBits'(MaxOutstanding);
  assign addr_o  = {next_beat_q, {BeatShift{1'b0}}};
  assign len_o   = 8'(burst_beats - 32'd1);
  assign size_o  = 3'(BeatShift);
  assign burst_o = 2'b01;  // INCR
  assign fire    = valid_o && ready_i;

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      outstanding_o  <= '0;
      beats_to_ask_q <= '0;
    end else begin
      outstanding_o <= outstanding_o + CountBits'(fire) - CountBits'(burst_done_i);
      if (start_i) begin
        next_beat_q    <= first_beat_i;
        beats_to_ask_q <= beats_i;
      end else if (fire) begin
        next_beat_q    <= next_beat_q + 58'(burst_beats);
        beats_to_ask_q <= beats_to_ask_q - burst_beats;
      end
    end
  end
endmodule
