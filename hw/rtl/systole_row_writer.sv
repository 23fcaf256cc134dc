// SPDX-License-Identifier: Apache-2.0
// One write port as rows: a request hands over a whole row (packed: row
// byte i at [8i +: 8]) with its address and length, and the port sends
// its beats through systole_dma_write while the next request waits (it is
// taken in the cycle the last beat goes). The row is taken in one cycle,
// so a group of these (systole_striped_writer) takes a row per cycle from
// one producer.
`include "systole_assert.svh"

module systole_row_writer #(
  parameter int unsigned RowBytes = 64,
  localparam int unsigned RowBeats = (RowBytes + systole_pkg::BeatBytes - 1) / systole_pkg::BeatBytes
) (
  input  logic                                clk_i,
  input  logic                                rst_ni,
  input  logic                                req_valid_i,
  output logic                                req_ready_o,
  input  systole_pkg::axi_addr_t              req_addr_i,
  input  logic [31:0]                         req_bytes_i,   // 1 .. RowBytes
  input  logic [RowBeats*systole_pkg::AxiDataBits-1:0] req_row_i,
  output logic                                idle_o,
  output logic                                error_o,
  input  logic                                clear_error_i,
  output systole_pkg::axi_req_t               axi_req_o,
  input  systole_pkg::axi_rsp_t               axi_rsp_i
);
  localparam int unsigned BeatBits = systole_pkg::AxiDataBits;
  localparam int unsigned IndexBits = RowBeats > 1 ? $clog2(RowBeats) : 1;

  logic                         sending_d, sending_q;  // row_q has beats not yet taken
  logic [IndexBits-1:0]         beat_d, beat_q;        // the next one
  logic [IndexBits-1:0]         last_d, last_q;        // the row's last beat
  logic [RowBeats*BeatBits-1:0] row_q;
  logic                         dma_ready, start, data_ready, dma_idle, free;

  systole_dma_write u_dma (
    .clk_i, .rst_ni,
    .req_valid_i(req_valid_i && free), .req_ready_o(dma_ready), .req_addr_i, .req_bytes_i,
    .data_valid_i(sending_q), .data_ready_o(data_ready), .data_i(row_q[BeatBits*beat_q +: BeatBits]),
    .idle_o(dma_idle), .error_o, .clear_error_i, .axi_req_o, .axi_rsp_i
  );

  // row_q is free, or its last beat goes this cycle.
  assign free        = !sending_q || (data_ready && beat_q == last_q);
  assign req_ready_o = dma_ready && free;
  assign start       = req_valid_i && req_ready_o;
  assign idle_o      = dma_idle && !sending_q;

  always_comb begin
    sending_d = sending_q;
    beat_d    = beat_q;
    last_d    = last_q;
    if (start) begin
      sending_d = 1'b1;
      beat_d    = '0;
      last_d    = IndexBits'((req_bytes_i - 32'd1) >> systole_pkg::AxiBeatShift);
    end else if (sending_q && data_ready) begin
      beat_d = beat_q + 1'b1;
      if (beat_q == last_q) sending_d = 1'b0;
    end
  end

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      sending_q <= 1'b0;
      beat_q    <= '0;
      last_q    <= '0;
    end else begin
      sending_q <= sending_d;
      beat_q    <= beat_d;
      last_q    <= last_d;
    end
  end
  // The row is data, qualified by sending_q.
  always_ff @(posedge clk_i) if (start) row_q <= req_row_i;

  `ASSERT(a_row_fits, req_valid_i |-> req_bytes_i != '0 && req_bytes_i <= RowBytes)
endmodule
