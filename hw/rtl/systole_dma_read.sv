// SPDX-License-Identifier: Apache-2.0
// AXI4 read DMA: bytes [addr, addr + bytes) of a port, delivered as the
// 64-byte beats that cover them, in order, `last` on each request's final
// beat. Requests become INCR bursts of full beats, each at most 256 beats
// and never across a 4 KiB boundary (so at most 64 beats with 512-bit data),
// with up to MaxOutstanding bursts in flight. Requests queue: the next one
// is taken as soon as every burst of the current one has been asked for,
// while up to MaxOutstanding requests still await beats, so short requests
// (a weight row, a C row) do not each pay the memory's latency. A SLVERR or
// DECERR response sets error_o (sticky until clear_error_i); the beats are
// still delivered, so the bus and every request always complete.
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
  localparam int unsigned SlotBits = $clog2(MaxOutstanding);

  // Beats of each queued request, oldest at head_q; the head's delivered
  // beats count in delivered_q.
  logic [31:0]         beats_q [MaxOutstanding];
  logic [SlotBits-1:0] head_q, tail_q;
  logic [SlotBits:0]   queued_q;
  logic [31:0]         delivered_q;
  logic [57:0]         first_beat, last_beat;
  logic [31:0]         beats;
  logic                start, r_fire, burst_done, asked_all, pop;
  logic [$clog2(MaxOutstanding + 1)-1:0] outstanding;

  if (2 ** SlotBits != MaxOutstanding) begin : g_check
    $error("MaxOutstanding must be a power of two (the request queue wraps)");
  end

  assign first_beat = req_addr_i[63:BeatShift];
  assign last_beat  = 58'((req_addr_i + 64'(req_bytes_i) - 64'd1) >> BeatShift);
  assign beats      = 32'(last_beat - first_beat) + 32'd1;
  assign start      = req_valid_i && req_ready_o;

  systole_dma_bursts #(.MaxOutstanding(MaxOutstanding)) u_bursts (
    .clk_i, .rst_ni,
    .start_i(start), .first_beat_i(first_beat), .beats_i(beats),
    .burst_done_i(burst_done), .asked_all_o(asked_all),
    .outstanding_o(outstanding),
    .valid_o(arvalid_o), .ready_i(arready_i), .addr_o(araddr_o), .len_o(arlen_o),
    .size_o(arsize_o), .burst_o(arburst_o)
  );

  assign req_ready_o  = asked_all && queued_q != (SlotBits+1)'(MaxOutstanding);
  assign beat_valid_o = rvalid_i;
  assign rready_o     = beat_ready_i;
  assign beat_o       = rdata_i;
  assign beat_last_o  = delivered_q + 32'd1 == beats_q[head_q];
  assign r_fire       = rvalid_i && rready_o;
  assign burst_done   = r_fire && rlast_i;
  assign pop          = r_fire && beat_last_o;

  // Unused here: the queue knows how many beats are due.
  logic unused;
  assign unused = ^outstanding;

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      head_q      <= '0;
      tail_q      <= '0;
      queued_q    <= '0;
      delivered_q <= '0;
      error_o     <= 1'b0;
    end else begin
      if (start) begin
        beats_q[tail_q] <= beats;
        tail_q <= tail_q + 1'b1;
      end
      if (pop) head_q <= head_q + 1'b1;
      queued_q <= queued_q + (SlotBits+1)'(start) - (SlotBits+1)'(pop);
      if (r_fire) delivered_q <= pop ? '0 : delivered_q + 32'd1;
      if (clear_error_i) error_o <= 1'b0;
      else if (r_fire && rresp_i[1]) error_o <= 1'b1;
    end
  end
endmodule
