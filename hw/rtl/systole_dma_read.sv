// SPDX-License-Identifier: Apache-2.0
// AXI4 read DMA: bytes [addr, addr + bytes) of a port, delivered as the
// beats that cover them, in order, `last` on each request's final beat.
// Requests become INCR bursts of full beats (systole_dma_bursts: at most
// 256 beats, never across 4 KiB), with up to MaxOutstanding bursts in
// flight. Requests queue: the next one is taken as soon as every burst of
// the current one has been asked for, while up to MaxOutstanding requests
// still await beats, so short requests (a weight row, a C row) do not each
// pay the memory's latency. A SLVERR or DECERR response sets error_o
// (sticky until clear_error_i); the beats are still delivered, so the bus
// and every request always complete. The port's write channels are idle.
`include "systole_assert.svh"

module systole_dma_read #(
  parameter int unsigned MaxOutstanding = 8
) (
  input  logic                   clk_i,
  input  logic                   rst_ni,
  // Requests.
  input  logic                   req_valid_i,
  output logic                   req_ready_o,
  input  systole_pkg::axi_addr_t req_addr_i,
  input  logic [31:0]            req_bytes_i,   // >= 1
  // Covering beats, in order.
  output logic                   beat_valid_o,
  input  logic                   beat_ready_i,
  output systole_pkg::axi_data_t beat_o,
  output logic                   beat_last_o,
  output logic                   error_o,
  input  logic                   clear_error_i,
  // The AXI4 port.
  output systole_pkg::axi_req_t  axi_req_o,
  input  systole_pkg::axi_rsp_t  axi_rsp_i
);
  localparam int unsigned BeatShift = systole_pkg::AxiBeatShift;
  localparam int unsigned BeatIndexBits = systole_pkg::AxiAddrBits - BeatShift;
  localparam int unsigned SlotBits = $clog2(MaxOutstanding);

  // Beats of each queued request, oldest at head_q; the head's delivered
  // beats count in delivered_q.
  logic [31:0]              beats_q [MaxOutstanding];
  logic [SlotBits-1:0]      head_d, head_q, tail_d, tail_q;
  logic [SlotBits:0]        queued_d, queued_q;
  logic [31:0]              delivered_d, delivered_q;
  logic                     error_d, error_q;
  logic [BeatIndexBits-1:0] first_beat, last_beat;
  logic [31:0]              beats;
  logic                     start, r_fire, burst_done, asked_all, pop;
  logic [$clog2(MaxOutstanding + 1)-1:0] outstanding;

  if (2 ** SlotBits != MaxOutstanding) begin : g_check
    $error("MaxOutstanding must be a power of two (the request queue wraps)");
  end

  assign first_beat = req_addr_i[systole_pkg::AxiAddrBits-1:BeatShift];
  assign last_beat  = BeatIndexBits'((req_addr_i + 64'(req_bytes_i) - 64'd1) >> BeatShift);
  assign beats      = 32'(last_beat - first_beat) + 32'd1;
  assign start      = req_valid_i && req_ready_o;

  systole_pkg::axi_ax_t ar;
  logic                 ar_valid;
  always_comb begin
    axi_req_o          = '0;  // no writes
    axi_req_o.ar       = ar;
    axi_req_o.ar_valid = ar_valid;
    axi_req_o.r_ready  = beat_ready_i;
  end

  systole_dma_bursts #(.MaxOutstanding(MaxOutstanding)) u_bursts (
    .clk_i, .rst_ni,
    .start_i(start), .first_beat_i(first_beat), .beats_i(beats),
    .burst_done_i(burst_done), .asked_all_o(asked_all),
    .outstanding_o(outstanding),
    .valid_o(ar_valid), .ready_i(axi_rsp_i.ar_ready), .ax_o(ar)
  );

  assign req_ready_o  = asked_all && queued_q != (SlotBits+1)'(MaxOutstanding);
  assign beat_valid_o = axi_rsp_i.r_valid;
  assign beat_o       = axi_rsp_i.r.data;
  assign beat_last_o  = delivered_q + 32'd1 == beats_q[head_q];
  assign error_o      = error_q;
  assign r_fire       = axi_rsp_i.r_valid && beat_ready_i;
  assign burst_done   = r_fire && axi_rsp_i.r.last;
  assign pop          = r_fire && beat_last_o;

  // Unused here: the queue knows how many beats are due.
  logic unused;
  assign unused = ^{outstanding, axi_rsp_i.aw_ready, axi_rsp_i.w_ready, axi_rsp_i.b_valid,
                    axi_rsp_i.b_resp, axi_rsp_i.r.resp[0]};

  always_comb begin
    head_d      = pop ? head_q + 1'b1 : head_q;
    tail_d      = start ? tail_q + 1'b1 : tail_q;
    queued_d    = queued_q + (SlotBits+1)'(start) - (SlotBits+1)'(pop);
    delivered_d = !r_fire ? delivered_q : pop ? '0 : delivered_q + 32'd1;
    // Bit 1 of RRESP marks SLVERR and DECERR; bit 0 alone (EXOKAY) needs
    // exclusive access, which this master never asks for.
    error_d     = clear_error_i ? 1'b0 : error_q || (r_fire && axi_rsp_i.r.resp[1]);
  end

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      head_q      <= '0;
      tail_q      <= '0;
      queued_q    <= '0;
      delivered_q <= '0;
      error_q     <= 1'b0;
    end else begin
      head_q      <= head_d;
      tail_q      <= tail_d;
      queued_q    <= queued_d;
      delivered_q <= delivered_d;
      error_q     <= error_d;
    end
  end
  // The queue's entries need no reset: queued_q says which are live.
  always_ff @(posedge clk_i) if (start) beats_q[tail_q] <= beats;

  `ASSERT(a_request_bytes, req_valid_i |-> req_bytes_i != '0)
  // Every beat belongs to a queued request.
  `ASSERT(a_beat_expected, axi_rsp_i.r_valid |-> queued_q != '0)
  // A request's last beat is its last burst's last beat.
  `ASSERT(a_last_agrees, r_fire && beat_last_o |-> axi_rsp_i.r.last)
endmodule
