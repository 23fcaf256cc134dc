// SPDX-License-Identifier: Apache-2.0
// The weight-stationary systolic array: Rows x Cols PEs as Rows instances of
// systole_pe_row. Rows run along K, columns along N. Each cycle one
// activation vector (Rows bf16 values of one row of A, for one K tile)
// enters; the array skews it so that row r reaches PE row r r cycles later,
// and every column's partial sum starts at +0 in the top PE and gains one
// product per PE row (NUMERICS.md order). The column sums leave deskewed,
// all Cols of them together, Rows + Cols cycles after their activation
// vector entered (Rows + Cols - 1 to cross the grid, one for the PEs'
// multiply stage).
//
// Weights: Rows cycles of weight_shift_i load one K tile into weight_bank_i,
// bottom row first (the first row shifted in travels furthest). The other
// bank keeps serving activations meanwhile. A bank must not be reloaded
// while activations naming it are still in the array (Rows + Cols cycles
// after the last one entered); the controller guarantees that.
//
// Shift registers are packed vectors shifted whole, not unpacked arrays
// shifted element by element: Verilator then simulates a 128-long skew as
// one wide shift, and yosys 0.23 reads them (no multi-dimensional packed
// ports or signals).
`include "systole_assert.svh"

module systole_array #(
  parameter int unsigned Rows = 4,
  parameter int unsigned Cols = 4
) (
  input  logic               clk_i,
  input  logic               rst_ni,   // the valid bits' (the data path has none)
  input  logic               weight_shift_i,
  input  logic               weight_bank_i,
  input  logic [Cols*16-1:0] weight_i,   // column c at [16c +: 16]
  input  logic               act_valid_i,
  input  logic               act_bank_i,
  input  logic [Rows*16-1:0] act_i,      // row r at [16r +: 16]
  output logic               sum_valid_o,
  output logic [Cols*32-1:0] sum_o       // column c at [32c +: 32]
);
  // Between rows: partial sums and weights flow down.
  logic [Cols*32-1:0] psum   [Rows+1];
  logic [Cols*16-1:0] weight [Rows+1];
  logic [Rows-1:0]    sum_valid;

  assign psum[0]   = '0;  // +0 at the top of every column
  assign weight[0] = weight_i;

  for (genvar r = 0; r < Rows; r++) begin : g_row
    logic [15:0] act;
    logic        act_valid, act_bank;
    // Input skew: row r is delayed r cycles (row 0 not at all).
    if (r == 0) begin : g_direct
      assign act       = act_i[15:0];
      assign act_valid = act_valid_i;
      assign act_bank  = act_bank_i;
    end else begin : g_delay
      logic [16*r-1:0] data_q;  // stage i at [16i +: 16]
      logic [r-1:0]    valid_q, bank_q;
      always_ff @(posedge clk_i) begin
        if (!rst_ni) valid_q <= '0;
        else valid_q <= (valid_q << 1) | r'(act_valid_i);
      end
      always_ff @(posedge clk_i) begin
        data_q <= (data_q << 16) | (16*r)'(act_i[16*r +: 16]);
        bank_q <= (bank_q << 1) | r'(act_bank_i);
      end
      assign act       = data_q[16*(r-1) +: 16];
      assign act_valid = valid_q[r-1];
      assign act_bank  = bank_q[r-1];
    end

    systole_pe_row #(.Cols(Cols)) u_row (
      .clk_i,
      .rst_ni,
      .weight_shift_i,
      .weight_bank_i,
      .weight_i   (weight[r]),
      .weight_o   (weight[r+1]),
      .act_valid_i(act_valid),
      .act_bank_i (act_bank),
      .act_i      (act),
      .sum_valid_o(sum_valid[r]),
      .psum_i     (psum[r]),
      .psum_o     (psum[r+1])
    );
  end

  // Output deskew: column c leaves c cycles before the last one; delay it
  // Cols - 1 - c cycles so that all columns leave together.
  for (genvar c = 0; c < Cols; c++) begin : g_deskew
    localparam int unsigned Delay = Cols - 1 - c;
    if (Delay == 0) begin : g_direct
      assign sum_o[32*c +: 32] = psum[Rows][32*c +: 32];
    end else begin : g_delay
      logic [32*Delay-1:0] sum_q;  // stage i at [32i +: 32]
      always_ff @(posedge clk_i) sum_q <= (sum_q << 32) | (32*Delay)'(psum[Rows][32*c +: 32]);
      assign sum_o[32*c +: 32] = sum_q[32*(Delay-1) +: 32];
    end
  end

  // The last row's valid bit marks the vector.
  assign sum_valid_o = sum_valid[Rows-1];

`ifndef SYNTHESIS
  // The controller's obligations, checked here where the banks are: a bank
  // is not reloaded until Rows + Cols cycles after the last activation
  // naming it entered, and an activation names only a bank whose K tile is
  // wholly shifted in. (No reset here: the counters start as after a long
  // idle time.)
  logic [31:0] since_use_q [2];  // cycles since an activation naming bank b entered
  logic [31:0] rows_in_q [2];    // rows shifted into bank b, modulo Rows
  logic        reload_ok, use_ok;
  initial begin
    since_use_q = '{2{32'(Rows + Cols)}};
    rows_in_q   = '{2{32'd0}};
  end
  always_ff @(posedge clk_i) begin
    for (int b = 0; b < 2; b++) begin
      if (act_valid_i && act_bank_i == 1'(b)) since_use_q[b] <= '0;
      else if (since_use_q[b] < Rows + Cols) since_use_q[b] <= since_use_q[b] + 32'd1;
      if (weight_shift_i && weight_bank_i == 1'(b))
        rows_in_q[b] <= rows_in_q[b] + 32'd1 == Rows ? '0 : rows_in_q[b] + 32'd1;
    end
  end
  assign reload_ok = (weight_bank_i ? since_use_q[1] : since_use_q[0]) >= Rows + Cols;
  assign use_ok    = (act_bank_i ? rows_in_q[1] : rows_in_q[0]) == '0;
  `ASSERT_NORESET(a_bank_idle_when_reloaded, weight_shift_i |-> reload_ok)
  `ASSERT_NORESET(a_bank_loaded_when_used, act_valid_i |-> use_ok)
`endif

  // Unused by design: weights leave at the bottom, and the valid bits of
  // rows above the last.
  logic unused;
  assign unused = ^{weight[Rows], sum_valid[Rows-1:0]};
endmodule
