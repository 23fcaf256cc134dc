// SPDX-License-Identifier: Apache-2.0
// One read port as rows: each request reads bytes [addr, addr + bytes)
// (bytes <= RowBytes) through systole_dma_read and delivers them as one
// row, byte 0 being the byte at addr (row byte i at [8i +: 8]; bytes past
// the request are whatever the covering beats held, for the consumer to
// mask). Requests queue behind each other like the DMA's; rows come out in
// request order, one held at a time (valid until row_ready_i). The next
// row's first beat may arrive in the cycle the held row is taken, so a
// stream of one-beat rows runs at one row per cycle.
module systole_row_reader #(
  parameter int unsigned RowBytes = 64,
  parameter int unsigned MaxOutstanding = 8
) (
  input  logic                  clk_i,
  input  logic                  rst_ni,
  // Requests.
  input  logic                  req_valid_i,
  output logic                  req_ready_o,
  input  logic [63:0]           req_addr_i,
  input  logic [31:0]           req_bytes_i,   // 1 .. RowBytes
  // Rows, in request order.
  output logic                  row_valid_o,
  input  logic                  row_ready_i,
  output logic [8*RowBytes-1:0] row_o,
  // Nothing queued and no row held: the port is quiet.
  output logic                  idle_o,
  output logic                  error_o,
  input  logic                  clear_error_i,
  // AXI4 read address and data channels.
  output logic                  arvalid_o,
  input  logic                  arready_i,
  output logic [63:0]           araddr_o,
  output logic [7:0]            arlen_o,
  output logic [2:0]            arsize_o,
  output logic [1:0]            arburst_o,
  input  logic                  rvalid_i,
  output logic                  rready_o,
  input  logic [511:0]          rdata_i,
  input  logic [1:0]            rresp_i,
  input  logic                  rlast_i
);
  localparam int unsigned SlotBits = $clog2(MaxOutstanding);
  // A row of RowBytes bytes starting anywhere in a beat covers at most
  // RowBytes / 64 + 1 beats (RowBytes is a multiple of 64 or smaller).
  localparam int unsigned RawBeats = (RowBytes + 63) / 64 + 1;

  logic               beat_valid, beat_ready, beat_last, start;
  logic [511:0]       beat;
  logic [5:0]         offset_q [MaxOutstanding];  // addr % 64 of each queued request
  logic [SlotBits-1:0] head_q, tail_q;
  logic [SlotBits:0]  queued_q;
  logic [$clog2(RawBeats)-1:0] beat_index_q;     // the next beat's place in raw_q
  logic [512*RawBeats-1:0] raw_q;                 // the request's beats, in order
  logic [5:0]         row_offset_q;               // offset of the row in raw_q
  logic               held_q;

  systole_dma_read #(.MaxOutstanding(MaxOutstanding)) u_dma (
    .clk_i, .rst_ni,
    .req_valid_i, .req_ready_o, .req_addr_i, .req_bytes_i,
    .beat_valid_o(beat_valid), .beat_ready_i(beat_ready), .beat_o(beat), .beat_last_o(beat_last),
    .error_o, .clear_error_i,
    .arvalid_o, .arready_i, .araddr_o, .arlen_o, .arsize_o, .arburst_o,
    .rvalid_i, .rready_o, .rdata_i, .rresp_i, .rlast_i
  );

  assign start       = req_valid_i && req_ready_o;
  assign beat_ready  = !held_q || row_ready_i;
  assign row_valid_o = held_q;
  assign row_o       = (8*RowBytes)'(raw_q >> {row_offset_q, 3'b000});
  assign idle_o      = queued_q == '0 && !held_q;

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      head_q       <= '0;
      tail_q       <= '0;
      queued_q     <= '0;
      beat_index_q <= '0;
      held_q       <= 1'b0;
    end else begin
      if (start) begin
        offset_q[tail_q] <= req_addr_i[5:0];
        tail_q <= tail_q + 1'b1;
      end
      queued_q <= queued_q + (SlotBits+1)'(start) - (SlotBits+1)'(beat_valid && beat_ready && beat_last);
      if (row_ready_i) held_q <= 1'b0;
      if (beat_valid && beat_ready) begin
        raw_q[512 * beat_index_q +: 512] <= beat;
        beat_index_q <= beat_last ? '0 : beat_index_q + 1'b1;
        if (beat_last) begin
          held_q       <= 1'b1;
          row_offset_q <= offset_q[head_q];
          head_q       <= head_q + 1'b1;
        end
      end
    end
  end
endmodule
