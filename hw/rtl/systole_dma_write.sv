// SPDX-License-Identifier: Apache-2.0
// AXI4 write DMA: one request at a time writes a row of `bytes` bytes to
// [addr, addr + bytes). The row arrives packed (row byte j is byte j % 64 of
// row beat j / 64); the DMA realigns it to memory beats and sets WSTRB on the
// partial first and last beats, so bytes outside the row keep their value.
// Bursts follow the read side's rules (at most 256 beats, never across
// 4 KiB), up to MaxOutstanding awaiting their response. A SLVERR or DECERR
// response sets error_o (sticky until clear_error_i). req_ready_o rises again
// as soon as the request's data has been sent, so rows stream out without
// waiting for the memory's responses; idle_o says that nothing is pending
// and every response has arrived (the launch waits for it before it ends).
module systole_dma_write #(
  parameter int unsigned MaxOutstanding = 8
) (
  input  logic         clk_i,
  input  logic         rst_ni,
  // Requests and the row's data.
  input  logic         req_valid_i,
  output logic         req_ready_o,
  input  logic [63:0]  req_addr_i,
  input  logic [31:0]  req_bytes_i,   // >= 1
  input  logic         data_valid_i,
  output logic         data_ready_o,
  input  logic [511:0] data_i,
  output logic         idle_o,
  output logic         error_o,
  input  logic         clear_error_i,
  // AXI4 write address channel.
  output logic         awvalid_o,
  input  logic         awready_i,
  output logic [63:0]  awaddr_o,
  output logic [7:0]   awlen_o,
  output logic [2:0]   awsize_o,
  output logic [1:0]   awburst_o,
  // AXI4 write data channel.
  output logic         wvalid_o,
  input  logic         wready_i,
  output logic [511:0] wdata_o,
  output logic [63:0]  wstrb_o,
  output logic         wlast_o,
  // AXI4 write response channel.
  input  logic         bvalid_i,
  output logic         bready_o,
  /* verilator lint_off UNUSEDSIGNAL */
  // Bit 1 marks SLVERR and DECERR (bit 0 alone is EXOKAY, never asked for).
  input  logic [1:0]   bresp_i
  /* verilator lint_on UNUSEDSIGNAL */
);
  localparam int unsigned BeatShift = $clog2(systole_pkg::BeatBytes);
  localparam int unsigned PageBeats = systole_pkg::AxiBoundaryBytes / systole_pkg::BeatBytes;
  localparam int unsigned CountBits = $clog2(MaxOutstanding + 1);

  logic        active_q;
  logic [5:0]  offset_q;          // addr % 64: where row byte 0 lands
  logic [5:0]  end_q;             // (addr + bytes - 1) % 64
  // Data side.
  logic [57:0] w_beat_q;          // memory beat index being written
  logic [31:0] w_index_q;         // its position in the request (0 = first)
  logic [31:0] w_beats_q;         // memory beats in the request
  logic [31:0] row_beats_q;       // row beats in the request
  logic [511:0] previous_q;       // the row beat before the current one
  logic        needs_row_beat, w_fire, b_fire, start, asked_all;
  logic [CountBits-1:0] outstanding;  // bursts whose response is due
  logic [57:0] first_beat, last_beat;
  logic [1023:0] window;

  assign first_beat = req_addr_i[63:BeatShift];
  assign last_beat  = 58'((req_addr_i + 64'(req_bytes_i) - 64'd1) >> BeatShift);
  assign start      = req_valid_i && req_ready_o;

  systole_dma_bursts #(.MaxOutstanding(MaxOutstanding)) u_bursts (
    .clk_i, .rst_ni,
    .start_i(start), .first_beat_i(first_beat), .beats_i(32'(last_beat - first_beat) + 32'd1),
    .burst_done_i(b_fire), .asked_all_o(asked_all),
    .outstanding_o(outstanding),
    .valid_o(awvalid_o), .ready_i(awready_i), .addr_o(awaddr_o), .len_o(awlen_o),
    .size_o(awsize_o), .burst_o(awburst_o)
  );

  // Data channel. Memory beat i holds row bytes [64 i - offset, 64 i -
  // offset + 63]: the low part from row beat i - 1, the high part from row
  // beat i (absent for the extra last beat an unaligned row may need).
  assign needs_row_beat = w_index_q < row_beats_q;
  assign window = {needs_row_beat ? data_i : 512'b0, previous_q};
  assign wdata_o = 512'(window >> (10'd512 - {offset_q, 3'b000}));
  assign wvalid_o = active_q && w_index_q < w_beats_q && (!needs_row_beat || data_valid_i);
  assign data_ready_o = active_q && needs_row_beat && w_index_q < w_beats_q && wready_i;
  // A burst ends at a page boundary or at the request's last beat.
  assign wlast_o = (w_index_q + 32'd1 == w_beats_q) ||
                   (w_beat_q[$clog2(PageBeats)-1:0] == $clog2(PageBeats)'(PageBeats - 1));
  always_comb begin
    wstrb_o = '1;
    if (w_index_q == '0) wstrb_o = wstrb_o & ~((64'd1 << offset_q) - 64'd1);
    if (w_index_q + 32'd1 == w_beats_q) wstrb_o = wstrb_o & ((64'd2 << end_q) - 64'd1);
  end
  assign w_fire = wvalid_o && wready_i;

  assign bready_o = 1'b1;
  assign b_fire = bvalid_i;
  assign req_ready_o = !active_q;
  assign idle_o      = !active_q && outstanding == '0;

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      active_q <= 1'b0;
      error_o  <= 1'b0;
    end else begin
      if (start) begin
        active_q       <= 1'b1;
        offset_q       <= req_addr_i[5:0];
        end_q          <= 6'(req_addr_i + 64'(req_bytes_i) - 64'd1);
        w_beat_q       <= first_beat;
        w_index_q      <= '0;
        w_beats_q      <= 32'(last_beat - first_beat) + 32'd1;
        row_beats_q    <= (req_bytes_i + 32'd63) >> BeatShift;
        previous_q     <= '0;
      end else begin
        if (w_fire) begin
          w_beat_q  <= w_beat_q + 58'd1;
          w_index_q <= w_index_q + 32'd1;
          if (needs_row_beat) previous_q <= data_i;
        end
        // The request is done when every burst was asked for and every beat
        // sent; its responses may still be on their way.
        if (active_q && asked_all && w_index_q == w_beats_q) active_q <= 1'b0;
      end
      if (clear_error_i) error_o <= 1'b0;
      else if (b_fire && bresp_i[1]) error_o <= 1'b1;
    end
  end
endmodule
