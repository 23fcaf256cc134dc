// SPDX-License-Identifier: Apache-2.0
// The init engine: prepares accumulator bank j % 2 for N tile j, once
// tile j - 2 (the bank's previous user) has been written back. It fills
// the bank's M rows with C read through port c (when accumulating; a bf16
// C widens to fp32) or with +0, one row per cycle, and reads the tile's
// bias row into the bank's bias register for the output stage.
`include "systole_assert.svh"

module systole_init_engine #(
  parameter int unsigned Cols = 4,
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
  input  logic [31:0]             written_i,    // N tiles written back
  // Row requests and rows on port c.
  output logic                    req_valid_o,
  input  logic                    req_ready_i,
  output systole_pkg::axi_addr_t  req_addr_o,
  output logic [31:0]             req_bytes_o,
  input  logic                    row_valid_i,
  input  logic [Cols*32-1:0]      row_i,
  output logic                    row_ready_o,
  // Into the accumulator memory.
  output logic                    init_valid_o,
  output logic                    init_bank_o,
  output logic [RowBits-1:0]      init_row_o,
  output logic [Cols*32-1:0]      init_o,
  // The bias of the tile in accumulator bank bias_bank_i.
  input  logic                    bias_bank_i,
  output logic [Cols*32-1:0]      bias_o,
  output logic [31:0]             inited_o      // N tiles initialised
);
  typedef struct packed {
    logic [31:0] j;       // the N tile being initialised
    logic [31:0] asked;   // rows requested (C rows, then the bias row)
    logic [31:0] got;     // rows arrived
    logic [31:0] zeroed;  // rows set to +0
  } state_t;
  state_t             s_d, s_q;
  logic [Cols*32-1:0] bias_q [2];  // per accumulator bank
  logic [Cols*32-1:0] bias_row;    // the arriving bias row, zero past the tile
  logic [31:0]        c_bytes, c_rows, rows, cols;
  logic               active, asks_c, row_is_c, take_bias;

  assign c_bytes  = systole_ctrl_pkg::c_bytes(desc_i.out_bf16);
  assign c_rows   = desc_i.accumulate ? desc_i.m : '0;
  assign rows     = c_rows + (desc_i.bias ? 32'd1 : 32'd0);
  assign cols     = systole_ctrl_pkg::tile_cols(desc_i.n, s_q.j, Cols);
  assign active   = run_i && s_q.j < desc_i.n_tiles && written_i + 32'd1 >= s_q.j;
  assign asks_c   = s_q.asked < c_rows;
  assign row_is_c = s_q.got < c_rows;

  assign req_valid_o = active && s_q.asked < rows;
  assign req_addr_o  = asks_c ? systole_ctrl_pkg::c_row_addr(desc_i.c, desc_i.ldc, c_bytes, s_q.asked, s_q.j, Cols)
                              : desc_i.bias_addr + 64'(s_q.j) * Cols * 64'd4;
  assign req_bytes_o = cols * (asks_c ? c_bytes : 32'd4);
  assign row_ready_o = active;
  assign take_bias   = active && row_valid_i && !row_is_c;

  assign init_valid_o = active && (desc_i.accumulate ? row_valid_i && row_is_c : s_q.zeroed < desc_i.m);
  assign init_bank_o  = s_q.j[0];
  assign init_row_o   = RowBits'(desc_i.accumulate ? s_q.got : s_q.zeroed);
  assign bias_o       = bias_q[bias_bank_i];
  assign inited_o     = s_q.j;
  always_comb begin
    init_o   = '0;
    bias_row = '0;
    for (int c = 0; c < Cols; c++)
      if (desc_i.accumulate && 32'(c) < cols)
        init_o[32*c +: 32] = desc_i.out_bf16 ? {row_i[16*c +: 16], 16'b0} : row_i[32*c +: 32];
    for (int c = 0; c < Cols; c++)
      if (32'(c) < cols) bias_row[32*c +: 32] = row_i[32*c +: 32];
  end

  always_comb begin
    s_d = s_q;
    if (clear_i) begin
      s_d = '0;
    end else if (active) begin
      if (req_valid_o && req_ready_i) s_d.asked = s_q.asked + 32'd1;
      if (row_valid_i) s_d.got = s_q.got + 32'd1;
      if (!desc_i.accumulate && s_q.zeroed < desc_i.m) s_d.zeroed = s_q.zeroed + 32'd1;
      // Every row in: the next N tile.
      if (s_q.got == rows && (desc_i.accumulate || s_q.zeroed == desc_i.m)) begin
        s_d.asked  = '0;
        s_d.got    = '0;
        s_d.zeroed = '0;
        s_d.j      = s_q.j + 32'd1;
      end
    end
  end

  always_ff @(posedge clk_i) begin
    if (!rst_ni) s_q <= '0;
    else s_q <= s_d;
  end
  // The bias registers are data, read only for tiles this engine set up.
  always_ff @(posedge clk_i) if (take_bias) bias_q[s_q.j[0]] <= bias_row;

  // Every row arriving on port c was asked for by this tile.
  `ASSERT(a_row_asked, active && row_valid_i |-> s_q.got < s_q.asked)
endmodule
