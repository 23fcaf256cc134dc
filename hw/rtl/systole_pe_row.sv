// SPDX-License-Identifier: Apache-2.0
// One row of Cols processing elements of the weight-stationary array. Each
// PE holds two weights (banks): one in use, one shifting in for the next K
// tile. An activation enters at the left with the bank of its K tile and
// moves one PE right per cycle. Each PE is two pipeline stages: it
// multiplies the activation passing it by the weight of the bank that
// activation names (exact, registered), then adds that product to the
// partial sum arriving from the PE above (registered, passed down). The
// multiply stage is off the partial-sum path, so the sums still move down
// one row per cycle and the stage adds one cycle of latency to the array,
// not a stall.
//
// The row is the unit the simulator sees: the PEs are one loop over the
// columns, which Verilator keeps as a loop for wide rows, and the module is
// generated once for all Rows instances (no_inline_module), so the build
// does not grow with the number of PEs (hw/rtl/README.md, "Verilator cost").
module systole_pe_row #(
  parameter int unsigned Cols = 4
) (
  input  logic               clk_i,
  input  logic               rst_ni,
  // Weight shift chain (down the columns), one row per weight_shift_i.
  input  logic               weight_shift_i,
  input  logic               weight_bank_i,  // bank being loaded
  input  logic [Cols*16-1:0] weight_i,       // from the row above, column c at [16c +: 16]
  output logic [Cols*16-1:0] weight_o,       // to the row below
  // The activation entering at the left, with its valid and bank bits.
  input  logic               act_valid_i,
  input  logic               act_bank_i,
  input  logic [15:0]        act_i,
  // The last column's valid bit, aligned with psum_o's last column.
  output logic               sum_valid_o,
  // Partial sums from the row above and to the row below.
  input  logic [Cols*32-1:0] psum_i,
  output logic [Cols*32-1:0] psum_o
);
  /*verilator no_inline_module*/

  // Per PE (lane c of each vector): the activation register and its bits,
  // both weight banks, the product and the partial sum.
  logic [Cols*16-1:0] act_d, act_q, weight0_q, weight1_q;
  logic [Cols-1:0]    valid_d, valid_q, bank_d, bank_q;
  logic [Cols*32-1:0] product_d, product_q, psum_d, psum_q;
  logic               last_valid_q;

  // What each PE sees this cycle: the activation of the PE on its left.
  assign act_d   = (act_q << 16) | (Cols*16)'(act_i);
  assign valid_d = (valid_q << 1) | Cols'(act_valid_i);
  assign bank_d  = (bank_q << 1) | Cols'(act_bank_i);
  always_comb begin
    for (int c = 0; c < Cols; c++) begin
      product_d[32*c +: 32] = systole_arith::bf16_mul(
          act_d[16*c +: 16], bank_d[c] ? weight1_q[16*c +: 16] : weight0_q[16*c +: 16]);
      psum_d[32*c +: 32] = systole_arith::fp32_add(psum_i[32*c +: 32], product_q[32*c +: 32]);
    end
  end

  // The valid bits are reset: nothing leaves the array that did not enter.
  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      valid_q      <= '0;
      last_valid_q <= 1'b0;
    end else begin
      valid_q      <= valid_d;
      last_valid_q <= valid_q[Cols-1];
    end
  end
  // The data path has no reset (FPGA DSP/fabric registers): the valid bits
  // qualify it.
  always_ff @(posedge clk_i) begin
    act_q     <= act_d;
    bank_q    <= bank_d;
    product_q <= product_d;
    psum_q    <= psum_d;
    if (weight_shift_i && !weight_bank_i) weight0_q <= weight_i;
    if (weight_shift_i && weight_bank_i) weight1_q <= weight_i;
  end

  assign weight_o    = weight_bank_i ? weight1_q : weight0_q;
  assign psum_o      = psum_q;
  assign sum_valid_o = last_valid_q;
endmodule
