// SPDX-License-Identifier: Apache-2.0
// The weight engine: requests every weight row of every (N tile, K tile)
// of a descriptor, in shift order, and shifts each K tile into the array's
// idle weight bank. Rows past K are not read; they shift in as zeros.
//
// A K tile's weights are Rows rows of 2 Cols bytes; the rows come through
// the b ports (systole_striped_reader), which at 128x128 bring a K tile in
// 256 cycles while the array streams it for M.
//
// K tile g goes into bank g % 2 once tile g - 2, the bank's last user, has
// streamed and left the PEs: Quiet (Rows + Cols) cycles after its last
// activation entered. Its rows shift as they arrive.
`include "systole_assert.svh"

module systole_weight_engine #(
  parameter int unsigned Rows = 4,
  parameter int unsigned Cols = 4,
  localparam int unsigned Quiet = Rows + Cols,
  localparam int unsigned QuietBits = $clog2(Quiet + 1)
) (
  input  logic                          clk_i,
  input  logic                          rst_ni,
  input  logic                          clear_i,    // a descriptor starts
  input  logic                          run_i,      // it computes
  /* verilator lint_off UNUSEDSIGNAL */  // the fields this engine needs
  input  systole_ctrl_pkg::desc_t       desc_i,
  /* verilator lint_on UNUSEDSIGNAL */
  // Row requests (offsets from the b ports' base), and the rows in
  // request order; take_o takes one.
  output logic                          ask_o,
  input  logic                          ask_ready_i,
  output systole_pkg::axi_addr_t        addr_o,
  output logic [31:0]                   bytes_o,
  input  logic                          row_valid_i,
  input  logic [Cols*16-1:0]            row_i,
  output logic                          take_o,
  // Into the array.
  output logic                          shift_o,
  output logic                          bank_o,
  output logic [Cols*16-1:0]            weight_o,
  output logic [31:0]                   loaded_o,   // K tiles shifted in so far
  // The stream engine: an activation entering, and K tiles streamed.
  input  logic                          act_valid_i,
  input  logic [31:0]                   streamed_i
);
  // Positions (N tile j, K tile t, row r, K tiles so far g).
  logic [31:0] ask_j, ask_t, ask_r, ask_g;  // rows requested (ask_g unused)
  logic [31:0] sh_j, sh_t, sh_r, sh_g;      // rows shifted in
  logic [31:0] ask_k, sh_k;
  logic        ask_active, ask_step, sh_active, bank_free, shift_zero;
  logic [QuietBits-1:0] quiet_d [2], quiet_q [2];  // cycles until bank b may reload

  // The K index of weight row r of K tile t (row 0 is shifted in first and
  // travels to the bottom of the array).
  function automatic logic [31:0] weight_k(logic [31:0] t, logic [31:0] r);
    weight_k = t * Rows + (Rows - 1 - r);
  endfunction

  // Requests.
  assign ask_k      = weight_k(ask_t, ask_r);
  assign ask_active = run_i && ask_j < desc_i.n_tiles;
  assign ask_o      = ask_active && ask_k < desc_i.k;
  assign addr_o     = desc_i.b + (64'(ask_k) * 64'(desc_i.ldb) + 64'(ask_j) * Cols) * 64'd2;
  assign bytes_o    = systole_ctrl_pkg::tile_cols(desc_i.n, ask_j, Cols) * 32'd2;
  assign ask_step   = ask_active && (ask_k >= desc_i.k || ask_ready_i);

  systole_tile_counter u_asked (
    .clk_i, .rst_ni, .clear_i, .step_i(ask_step),
    .steps_i(Rows), .k_tiles_i(desc_i.k_tiles), .j_o(ask_j), .t_o(ask_t), .i_o(ask_r), .g_o(ask_g)
  );

  // Shifts.
  assign sh_k       = weight_k(sh_t, sh_r);
  assign sh_active  = run_i && sh_j < desc_i.n_tiles;
  assign bank_free  = sh_r != '0 || (streamed_i + 32'd1 >= sh_g && quiet_q[sh_g[0]] == '0);
  assign shift_zero = sh_k >= desc_i.k;
  assign shift_o    = sh_active && bank_free && (shift_zero || row_valid_i);
  assign take_o     = shift_o && !shift_zero;
  assign bank_o     = sh_g[0];
  assign loaded_o   = sh_g;
  always_comb begin
    for (int c = 0; c < Cols; c++)
      weight_o[16*c +: 16] = (!shift_zero && 32'(c) < systole_ctrl_pkg::tile_cols(desc_i.n, sh_j, Cols)) ? row_i[16*c +: 16] : 16'b0;
  end

  systole_tile_counter u_shifted (
    .clk_i, .rst_ni, .clear_i, .step_i(shift_o),
    .steps_i(Rows), .k_tiles_i(desc_i.k_tiles), .j_o(sh_j), .t_o(sh_t), .i_o(sh_r), .g_o(sh_g)
  );

  // An activation entering names bank streamed_i % 2: that bank is in use
  // for Quiet more cycles.
  always_comb begin
    for (int b = 0; b < 2; b++) begin
      quiet_d[b] = quiet_q[b];
      if (act_valid_i && streamed_i[0] == 1'(b)) quiet_d[b] = QuietBits'(Quiet);
      else if (quiet_q[b] != '0) quiet_d[b] = quiet_q[b] - 1'b1;
    end
  end

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      quiet_q[0] <= '0;
      quiet_q[1] <= '0;
    end else begin
      quiet_q[0] <= quiet_d[0];
      quiet_q[1] <= quiet_d[1];
    end
  end

  logic unused;
  assign unused = ^ask_g;

  // A row is taken only when one is there.
  `ASSERT(a_take_valid, take_o |-> row_valid_i)
  // The shifter never passes the requester (rows are shifted in request order).
  `ASSERT(a_shift_after_ask, run_i |-> sh_g <= ask_g)
endmodule
