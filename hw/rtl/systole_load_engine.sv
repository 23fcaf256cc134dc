// SPDX-License-Identifier: Apache-2.0
// The load engine: brings a descriptor's block of A into the activation
// buffer in the order the array first consumes it, K tile by K tile and
// row by row within a K tile: each request is one row's K tile (Rows
// values, fewer in the last K tile), stored zero-padded to Rows values.
// It runs while the first N tile computes; the stream engine lets row m
// of K tile t enter once chunk t * M + m is stored (loaded_o counts them).
`include "systole_assert.svh"

module systole_load_engine #(
  parameter int unsigned Rows = 4,
  parameter int unsigned MaxM = 256,
  localparam int unsigned RowBits = $clog2(MaxM)
) (
  input  logic                    clk_i,
  input  logic                    rst_ni,
  input  logic                    clear_i,      // a descriptor starts
  input  logic                    run_i,        // it computes
  /* verilator lint_off UNUSEDSIGNAL */  // the fields this engine needs
  input  systole_ctrl_pkg::desc_t desc_i,
  /* verilator lint_on UNUSEDSIGNAL */
  // Chunk requests (offsets from the a ports' base) and the chunks, in order.
  output logic                    req_valid_o,
  input  logic                    req_ready_i,
  output systole_pkg::axi_addr_t  req_addr_o,
  output logic [31:0]             req_bytes_o,
  input  logic                    row_valid_i,
  input  logic [Rows*16-1:0]      row_i,
  output logic                    row_ready_o,
  // Into the activation buffer.
  output logic                    buf_write_o,
  output logic [RowBits-1:0]      buf_row_o,
  output logic [31:0]             buf_k_tile_o,
  output logic [Rows*16-1:0]      buf_data_o,
  output logic [31:0]             loaded_o      // chunks stored
);
  logic [31:0] ask_j, ask_t, ask_m, ask_g, st_j, st_t, st_m, st_g, loaded_d, loaded_q;
  logic        ask;

  // Requests: (K tile ask_t, row ask_m) while the first pass (ask_j == 0) lasts.
  assign req_valid_o = run_i && ask_j == '0;
  assign req_addr_o  = desc_i.a + (64'(ask_m) * 64'(desc_i.lda) + 64'(ask_t) * Rows) * 64'd2;
  assign req_bytes_o = (desc_i.k - ask_t * Rows >= Rows ? 32'(Rows) : desc_i.k - ask_t * Rows) * 32'd2;
  assign ask         = req_valid_o && req_ready_i;
  systole_tile_counter u_asked (
    .clk_i, .rst_ni, .clear_i, .step_i(ask),
    .steps_i(desc_i.m), .k_tiles_i(desc_i.k_tiles), .j_o(ask_j), .t_o(ask_t), .i_o(ask_m), .g_o(ask_g)
  );

  // Chunks: stored as they come, in request order.
  assign row_ready_o  = 1'b1;
  assign buf_write_o  = row_valid_i;
  assign buf_row_o    = RowBits'(st_m);
  assign buf_k_tile_o = st_t;
  always_comb begin
    for (int r = 0; r < Rows; r++)
      buf_data_o[16*r +: 16] = st_t * Rows + 32'(r) < desc_i.k ? row_i[16*r +: 16] : 16'b0;
  end
  systole_tile_counter u_stored (
    .clk_i, .rst_ni, .clear_i, .step_i(row_valid_i),
    .steps_i(desc_i.m), .k_tiles_i(desc_i.k_tiles), .j_o(st_j), .t_o(st_t), .i_o(st_m), .g_o(st_g)
  );
  assign loaded_d = clear_i ? '0 : loaded_q + 32'(row_valid_i);
  always_ff @(posedge clk_i) begin
    if (!rst_ni) loaded_q <= '0;
    else loaded_q <= loaded_d;
  end
  assign loaded_o = loaded_q;

  logic unused;
  assign unused = ^{ask_g, st_g};
  // Only asked-for chunks arrive, none past the block.
  `ASSERT_DISABLE(a_chunk_asked,
      row_valid_i |-> st_j == '0 && (st_t < ask_t || (st_t == ask_t && st_m < ask_m) || ask_j != '0),
      !rst_ni || clear_i)
endmodule
