// The compute core of one N tile: the weight-stationary array, the fp32
// accumulator memory in which K tiles accumulate, and the output stage.
//
// The controller (1) writes every row's starting value (C when
// accumulating, else +0) through the init port, (2) clears the row counter
// and streams K tiles through the array; each column-sum vector leaving the
// array is added to accumulator row `row_q`, which counts 0 .. rows_i - 1
// and wraps, so tile after tile adds to rows 0 .. M-1 in K order
// (NUMERICS.md: acc = acc + s); (3) after the last sums have left the
// array, reads rows out through the output stage (bias, ReLU, fp32/bf16).
// Init, accumulation and readout do not overlap; the controller ensures it.
module systole_core #(
  parameter int unsigned Rows = 4,
  parameter int unsigned Cols = 4,
  parameter int unsigned MaxM = 256,
  localparam int unsigned RowBits = $clog2(MaxM)
) (
  input  logic                  clk_i,
  // Weights and activations, as systole_array takes them.
  input  logic                  weight_shift_i,
  input  logic                  weight_bank_i,
  input  logic [Cols*16-1:0]    weight_i,
  input  logic                  act_valid_i,
  input  logic                  act_bank_i,
  input  logic [Rows*16-1:0]    act_i,
  // Lane vectors are flat (yosys 0.23 reads no multi-dimensional packed
  // ports): column c is bits [16c +: 16] or [32c +: 32].
  // Accumulator rows: starting values. They need no canonicalisation: every
  // row passes through the adder at least once (K >= 1), and the adder reads
  // a zero exponent as zero and any NaN as the canonical NaN.
  input  logic                  init_valid_i,
  input  logic [RowBits-1:0]    init_row_i,
  input  logic [Cols*32-1:0]    init_i,
  // Accumulation: restart at row 0; M rows per K tile.
  input  logic                  clear_row_i,
  input  logic [RowBits:0]      rows_i,
  // Readout through the output stage, one cycle later on word_o.
  input  logic                  read_valid_i,
  input  logic [RowBits-1:0]    read_row_i,
  input  logic                  bias_en_i,
  input  logic                  relu_en_i,
  input  logic                  bf16_en_i,
  input  logic [Cols*32-1:0]    bias_i,
  output logic                  word_valid_o,
  output logic [Cols*32-1:0]    word_o
);
  logic                  sum_valid;
  logic [Cols*32-1:0]    sum, total, staged;
  logic [RowBits-1:0]    row_q;
  // One row of fp32 partial sums per entry (URAM/BRAM on a board).
  logic [Cols*32-1:0]    accumulators_q [MaxM];

  systole_array #(.Rows(Rows), .Cols(Cols)) u_array (
    .clk_i,
    .weight_shift_i,
    .weight_bank_i,
    .weight_i,
    .act_valid_i,
    .act_bank_i,
    .act_i,
    .sum_valid_o(sum_valid),
    .sum_o      (sum)
  );

  for (genvar c = 0; c < Cols; c++) begin : g_lane
    systole_fp32_add u_accumulate (
      .a_i  (accumulators_q[row_q][32*c +: 32]),
      .b_i  (sum[32*c +: 32]),
      .sum_o(total[32*c +: 32])
    );
    systole_output_stage u_output (
      .bias_en_i,
      .relu_en_i,
      .bf16_en_i,
      .accumulator_i(accumulators_q[read_row_i][32*c +: 32]),
      .bias_i       (bias_i[32*c +: 32]),
      .word_o       (staged[32*c +: 32])
    );
  end

  always_ff @(posedge clk_i) begin
    if (init_valid_i) accumulators_q[init_row_i] <= init_i;
    if (sum_valid) accumulators_q[row_q] <= total;
    if (clear_row_i) row_q <= '0;
    else if (sum_valid) row_q <= ({1'b0, row_q} + 1'b1 == rows_i) ? '0 : row_q + 1'b1;
    word_valid_o <= read_valid_i;
    word_o <= staged;
  end
endmodule
