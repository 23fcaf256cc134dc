// SPDX-License-Identifier: Apache-2.0
// The stream engine: feeds the array one activation row per cycle, M rows
// per K tile, K tile after K tile, N tile after N tile. A row enters once
// its K tile's weights are in the array, during the first N tile once the
// load engine has stored it, and, for the first row of an N tile, once
// that tile's accumulator bank is initialised; there is no gap when all
// are ready ahead. Each row carries its tag: the accumulator
// bank and row its sums go to, and whether it is the N tile's last.
`include "systole_assert.svh"

module systole_stream_engine #(
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
  input  logic [31:0]             loaded_i,     // K tiles of weights shifted in
  input  logic [31:0]             inited_i,     // N tiles whose bank is initialised
  input  logic [31:0]             a_loaded_i,   // A chunks stored, in (K tile, row) order
  // The activation entering the array this cycle, and its tag.
  output logic                    valid_o,
  output logic                    bank_o,       // weight bank
  output logic                    acc_bank_o,   // accumulator bank
  output logic [RowBits-1:0]      row_o,        // A row, accumulator row
  output logic [31:0]             k_tile_o,     // which Rows values of the row
  output logic                    final_o,      // in the N tile's last K tile
  output logic                    last_o,       // the N tile's last
  output logic [31:0]             streamed_o,   // K tiles streamed (all N tiles)
  // Nothing entered although the descriptor has rows left.
  output logic                    stall_o
);
  logic [31:0] j, t, m, g;
  logic [31:0] chunk_d, chunk_q;  // during N tile 0, t * M + m: the chunk this row needs
  logic        active;

  assign active     = run_i && j < desc_i.n_tiles;
  assign valid_o    = active && loaded_i > g && (j != '0 || a_loaded_i > chunk_q) &&
                      (t != '0 || m != '0 || inited_i > j);
  assign bank_o     = g[0];
  assign acc_bank_o = j[0];
  assign row_o      = RowBits'(m);
  assign k_tile_o   = t;
  assign final_o    = t + 32'd1 == desc_i.k_tiles;
  assign last_o     = final_o && m + 32'd1 == desc_i.m;
  assign streamed_o = g;
  assign stall_o    = active && !valid_o;

  systole_tile_counter u_streamed (
    .clk_i, .rst_ni, .clear_i, .step_i(valid_o),
    .steps_i(desc_i.m), .k_tiles_i(desc_i.k_tiles), .j_o(j), .t_o(t), .i_o(m), .g_o(g)
  );

  assign chunk_d = clear_i ? '0 : chunk_q + 32'(valid_o && j == '0);
  always_ff @(posedge clk_i) begin
    if (!rst_ni) chunk_q <= '0;
    else chunk_q <= chunk_d;
  end

  `ASSERT(a_row_in_buffer, valid_o |-> m < MaxM)
endmodule
