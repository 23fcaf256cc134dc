// SPDX-License-Identifier: Apache-2.0
// AXI4 write DMA: one request at a time writes a row of `bytes` bytes to
// [addr, addr + bytes). The row arrives packed (row byte j is byte
// j % BeatBytes of row beat j / BeatBytes); the DMA realigns it to memory
// beats and sets WSTRB on the partial first and last beats, so bytes
// outside the row keep their value. Bursts follow the read side's rules
// (systole_dma_bursts), up to MaxOutstanding awaiting their response. A
// SLVERR or DECERR response sets error_o (sticky until clear_error_i).
// The next request is taken in the cycle the current one's last beat goes
// out (its bursts all asked for), so rows stream out back to back without
// waiting for the memory's responses; idle_o says
// that nothing is pending and every response has arrived (the launch waits
// for it before it ends). The port's read channels are idle.
`include "systole_assert.svh"

module systole_dma_write #(
  parameter int unsigned MaxOutstanding = 8
) (
  input  logic                   clk_i,
  input  logic                   rst_ni,
  // Requests and the row's data.
  input  logic                   req_valid_i,
  output logic                   req_ready_o,
  input  systole_pkg::axi_addr_t req_addr_i,
  input  logic [31:0]            req_bytes_i,   // >= 1
  input  logic                   data_valid_i,
  output logic                   data_ready_o,
  input  systole_pkg::axi_data_t data_i,
  output logic                   idle_o,
  output logic                   error_o,
  input  logic                   clear_error_i,
  // The AXI4 port (write channels).
  output systole_pkg::axi_req_t  axi_req_o,
  input  systole_pkg::axi_rsp_t  axi_rsp_i
);
  localparam int unsigned BeatBytes = systole_pkg::BeatBytes;
  localparam int unsigned BeatBits = systole_pkg::AxiDataBits;
  localparam int unsigned BeatShift = systole_pkg::AxiBeatShift;
  localparam int unsigned BeatIndexBits = systole_pkg::AxiAddrBits - BeatShift;
  localparam int unsigned PageBeats = systole_pkg::AxiBoundaryBytes / BeatBytes;
  localparam int unsigned PageBits = $clog2(PageBeats);
  localparam int unsigned CountBits = $clog2(MaxOutstanding + 1);

  typedef struct packed {
    logic                     active;     // a request is being sent
    logic [BeatShift-1:0]     offset;     // addr % BeatBytes: where row byte 0 lands
    logic [BeatShift-1:0]     last_byte;  // (addr + bytes - 1) % BeatBytes
    logic [BeatIndexBits-1:0] beat;       // memory beat index being written
    logic [31:0]              index;      // its position in the request (0 = first)
    logic [31:0]              beats;      // memory beats in the request
    logic [31:0]              row_beats;  // row beats in the request
  } state_t;
  state_t                 s_d, s_q;
  systole_pkg::axi_data_t previous_d, previous_q;  // the row beat before the current one
  logic                   error_d, error_q;
  logic                   needs_row_beat, w_fire, b_fire, start, asked_all, finishing;
  logic [CountBits-1:0]   outstanding;  // bursts whose response is due
  logic [BeatIndexBits-1:0] first_beat, last_beat;
  logic [2*BeatBits-1:0]  window;

  assign first_beat = req_addr_i[systole_pkg::AxiAddrBits-1:BeatShift];
  assign last_beat  = BeatIndexBits'((req_addr_i + 64'(req_bytes_i) - 64'd1) >> BeatShift);
  assign start      = req_valid_i && req_ready_o;

  systole_dma_bursts #(.MaxOutstanding(MaxOutstanding)) u_bursts (
    .clk_i, .rst_ni,
    .start_i(start), .first_beat_i(first_beat), .beats_i(32'(last_beat - first_beat) + 32'd1),
    .burst_done_i(b_fire), .asked_all_o(asked_all),
    .outstanding_o(outstanding),
    .valid_o(axi_req_o.aw_valid), .ready_i(axi_rsp_i.aw_ready), .ax_o(axi_req_o.aw)
  );

  // Data channel. Memory beat i holds row bytes [BeatBytes i - offset,
  // BeatBytes (i + 1) - offset - 1]: the low part from row beat i - 1, the
  // high part from row beat i (absent for the extra last beat an unaligned
  // row may need).
  assign needs_row_beat = s_q.index < s_q.row_beats;
  assign window = {needs_row_beat ? data_i : '0, previous_q};
  always_comb begin
    axi_req_o.ar       = '0;  // no reads
    axi_req_o.ar_valid = 1'b0;
    axi_req_o.r_ready  = 1'b0;
    axi_req_o.b_ready  = 1'b1;
    axi_req_o.w.data   = BeatBits'(window >> (BeatBits - 8 * 32'(s_q.offset)));
    axi_req_o.w_valid  = s_q.active && s_q.index < s_q.beats && (!needs_row_beat || data_valid_i);
    // A burst ends at a page boundary or at the request's last beat.
    axi_req_o.w.last   = (s_q.index + 32'd1 == s_q.beats) ||
                         (s_q.beat[PageBits-1:0] == PageBits'(PageBeats - 1));
    axi_req_o.w.strb   = '1;
    if (s_q.index == '0)
      axi_req_o.w.strb = axi_req_o.w.strb & ~((BeatBytes'(1) << s_q.offset) - BeatBytes'(1));
    if (s_q.index + 32'd1 == s_q.beats)
      axi_req_o.w.strb = axi_req_o.w.strb & ((BeatBytes'(2) << s_q.last_byte) - BeatBytes'(1));
  end
  assign data_ready_o = s_q.active && needs_row_beat && s_q.index < s_q.beats && axi_rsp_i.w_ready;
  assign w_fire       = axi_req_o.w_valid && axi_rsp_i.w_ready;
  assign b_fire       = axi_rsp_i.b_valid;
  assign finishing    = s_q.active && asked_all && w_fire && s_q.index + 32'd1 == s_q.beats;
  assign req_ready_o  = !s_q.active || finishing;
  assign idle_o       = !s_q.active && outstanding == '0;
  assign error_o      = error_q;

  logic unused;
  assign unused = ^{axi_rsp_i.ar_ready, axi_rsp_i.r_valid, axi_rsp_i.r, axi_rsp_i.b_resp[0]};

  always_comb begin
    s_d        = s_q;
    previous_d = previous_q;
    if (start) begin
      s_d.active    = 1'b1;
      s_d.offset    = req_addr_i[BeatShift-1:0];
      s_d.last_byte = BeatShift'(req_addr_i + 64'(req_bytes_i) - 64'd1);
      s_d.beat      = first_beat;
      s_d.index     = '0;
      s_d.beats     = 32'(last_beat - first_beat) + 32'd1;
      s_d.row_beats = (req_bytes_i + 32'(BeatBytes - 1)) >> BeatShift;
      previous_d    = '0;
    end else begin
      if (w_fire) begin
        s_d.beat  = s_q.beat + 1'b1;
        s_d.index = s_q.index + 32'd1;
        if (needs_row_beat) previous_d = data_i;
      end
      // The request is done when every burst was asked for and every beat
      // sent; its responses may still be on their way.
      if (s_q.active && asked_all && s_q.index == s_q.beats) s_d.active = 1'b0;
    end
    // Bit 1 of BRESP marks SLVERR and DECERR (bit 0 alone is EXOKAY,
    // never asked for).
    error_d = clear_error_i ? 1'b0 : error_q || (b_fire && axi_rsp_i.b_resp[1]);
  end

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      s_q     <= '0;
      error_q <= 1'b0;
    end else begin
      s_q     <= s_d;
      error_q <= error_d;
    end
  end
  // The previous row beat is data, qualified by s_q.
  always_ff @(posedge clk_i) previous_q <= previous_d;

`ifndef SYNTHESIS
  `ASSERT(a_request_bytes, req_valid_i |-> req_bytes_i != '0)
  // Write data held until it is taken does not change. Known gap: WVALID
  // follows data_valid_i, so a producer that withdraws its data withdraws
  // WVALID (the kernel's write engine never does); only the payload of a
  // beat still offered is checked.
  systole_hold_check #(.Width($bits(systole_pkg::axi_w_t)), .ValidHeld(1'b0)) u_data_held (
    .clk_i, .rst_ni, .valid_i(axi_req_o.w_valid), .ready_i(axi_rsp_i.w_ready), .payload_i(axi_req_o.w)
  );
  // Every response answers a burst whose address was sent.
  `ASSERT(a_response_expected, axi_rsp_i.b_valid |-> outstanding != '0)
`endif
endmodule
