// One processing element of the weight-stationary array. It holds two
// weights (banks): one in use, one shifting in for the next K tile. Each
// cycle it multiplies the activation arriving from the left by the weight
// of the bank that activation names, adds the partial sum arriving from
// above, and passes the activation right and the sum down (registered).
// Weights shift down the column, one PE per weight_shift_i cycle.
module systole_pe (
  input  logic        clk_i,
  // Weight shift chain (down the column).
  input  logic        weight_shift_i,
  input  logic        weight_bank_i,   // bank being loaded
  input  logic [15:0] weight_i,        // from the PE above
  output logic [15:0] weight_o,        // to the PE below
  // Activations (left to right), with the bank of their K tile.
  input  logic        act_valid_i,
  input  logic        act_bank_i,
  input  logic [15:0] act_i,
  output logic        act_valid_o,
  output logic        act_bank_o,
  output logic [15:0] act_o,
  // Partial sums (top to bottom).
  input  logic [31:0] psum_i,
  output logic [31:0] psum_o
);
  // Two banks as separate registers (yosys 0.23 reads no 2-D packed arrays).
  logic [15:0] weight0_q, weight1_q;
  logic [31:0] product, sum;

  systole_bf16_mul u_mul (
    .a_i      (act_i),
    .b_i      (act_bank_i ? weight1_q : weight0_q),
    .product_o(product)
  );
  systole_fp32_add u_add (
    .a_i  (psum_i),
    .b_i  (product),
    .sum_o(sum)
  );

  assign weight_o = weight_bank_i ? weight1_q : weight0_q;

  // Data path registers: no reset (FPGA DSP/fabric registers), the valid
  // bit qualifies them.
  always_ff @(posedge clk_i) begin
    if (weight_shift_i && !weight_bank_i) weight0_q <= weight_i;
    if (weight_shift_i && weight_bank_i) weight1_q <= weight_i;
    act_valid_o <= act_valid_i;
    act_bank_o  <= act_bank_i;
    act_o       <= act_i;
    psum_o      <= sum;
  end
endmodule
