// AXI4 read DMA: one request at a time, bytes [addr, addr + bytes) of a
// port, delivered as the 64-byte beats that cover them, in order, `last` on
// the request's final beat. Requests become INCR bursts of full beats, each
// at most 256 beats and never across a 4 KiB boundary (so at most 64 beats
// with 512-bit data), with up to MaxOutstanding bursts in flight. A SLVERR
// or DECERR response sets error_o (sticky until clear_error_i); the beats
// are still delivered, so the bus and the request always complete.
module systole_dma_read #(
  parameter int unsigned MaxOutstanding = 8
) (
  input  logic         clk_i,
  input  logic         rst_ni,
  // Requests.
  input  logic         req_valid_i,
  output logic         req_ready_o,
  input  logic [63:0]  req_addr_i,
  input  logic [31:0]  req_bytes_i,   // >= 1
  // Covering beats, in order.
  output logic         beat_valid_o,
  input  logic         beat_ready_i,
  output logic [511:0] beat_o,
  output logic         beat_last_o,
  output logic         error_o,
  input  logic         clear_error_i,
  // AXI4 read address channel.
  output logic         arvalid_o,
  input  logic         arready_i,
  output logic [63:0]  araddr_o,
  output logic [7:0]   arlen_o,
  output logic [2:0]   arsize_o,
  output logic [1:0]   arburst_o,
  // AXI4 read data channel.
  input  logic         rvalid_i,
  output logic         rready_o,
  input  logic [511:0] rdata_i,
  /* verilator lint_off UNUSEDSIGNAL */
  // Bit 1 marks SLVERR and DECERR; bit 0 alone (EXOKAY) needs exclusive
  // access, which this master never asks for.
  input  logic [1:0]   rresp_i,
  /* verilator lint_on UNUSEDSIGNAL */
  input  logic         rlast_i
);
  localparam int unsigned BeatShift = $clog2(systole_pkg::BeatBytes);

  logic        active_q;          // a request is in progress
  logic [31:0] beats_to_get_q;    // beats not yet delivered
  logic [57:0] first_beat, last_beat;
  logic        start, r_fire, burst_done;
  logic [$clog2(MaxOutstanding + 1)-1:0] outstanding;
  logic        asked_all;

  assign first_beat = req_addr_i[63:BeatShift];
  assign last_beat  = 58'((req_addr_i + 64'(req_bytes_i) - 64'd1) >> BeatShift);
  assign start      = req_valid_i && req_ready_o;

  systole_dma_bursts #(.MaxOutstanding(MaxOutstanding)) u_bursts (
    .clk_i, .rst_ni,
    .start_i(start), .first_beat_i(first_beat), .beats_i(32'(last_beat - first_beat) + 32'd1),
    .active_i(active_q), .burst_done_i(burst_done), .asked_all_o(asked_all),
    .outstanding_o(outstanding),
    .valid_o(arvalid_o), .ready_i(arready_i), .addr_o(araddr_o), .len_o(arlen_o),
    .size_o(arsize_o), .burst_o(arburst_o)
  );

  assign req_ready_o  = !active_q;
  assign beat_valid_o = rvalid_i;
  assign rready_o     = beat_ready_i;
  assign beat_o       = rdata_i;
  assign beat_last_o  = beats_to_get_q == 32'd1;
  assign r_fire       = rvalid_i && rready_o;
  assign burst_done   = r_fire && rlast_i;

  // Unused here: the data side knows when the request is complete.
  logic unused;
  assign unused = ^{asked_all, outstanding};

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      active_q <= 1'b0;
      error_o  <= 1'b0;
    end else begin
      if (start) begin
        active_q       <= 1'b1;
        beats_to_get_q <= 32'(last_beat - first_beat) + 32'd1;
      end else if (r_fire) begin
        beats_to_get_q <= beats_to_get_q - 32'd1;
        if (beats_to_get_q == 32'd1) active_q <= 1'b0;
      end
      if (clear_error_i) error_o <= 1'b0;
      else if (r_fire && rresp_i[1]) error_o <= 1'b1;
    end
  end
endmodule
