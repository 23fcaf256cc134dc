// SPDX-License-Identifier: Apache-2.0
// The compute core: the weight-stationary array, the fp32 accumulator
// memory in which K tiles accumulate, and the output stage.
//
// The accumulator memory has two banks of MaxM rows, one per N tile in
// flight: while the array's sums accumulate into one bank, the controller
// fills the other with the next N tile's starting values (C when
// accumulating, else +0) or reads the previous tile's results out through
// the output stage. Each activation vector carries a tag (accumulator bank,
// row, in its N tile's last K tile, last of its N tile) that travels beside
// the array for exactly its latency, so every column-sum vector leaving the
// array is added to its row (NUMERICS.md: acc = acc + s, K tile after K
// tile); one of the last K tile raises row_done_o (that row is final), and
// the last one of an N tile also tile_done_o. The controller keeps the three users of
// a bank apart.
module systole_core #(
  parameter int unsigned Rows = 4,
  parameter int unsigned Cols = 4,
  parameter int unsigned MaxM = 256,
  localparam int unsigned RowBits = $clog2(MaxM)
) (
  input  logic                  clk_i,
  input  logic                  rst_ni,
  // Weights and activations, as systole_array takes them.
  input  logic                  weight_shift_i,
  input  logic                  weight_bank_i,
  input  logic [Cols*16-1:0]    weight_i,
  input  logic                  act_valid_i,
  input  logic                  act_bank_i,
  input  logic [Rows*16-1:0]    act_i,
  // The activation's tag: where its sums accumulate.
  input  logic                  act_acc_bank_i,
  input  logic [RowBits-1:0]    act_row_i,
  input  logic                  act_final_i,    // a vector of its N tile's last K tile
  input  logic                  act_last_i,     // the last vector of its N tile
  output logic                  row_done_o,     // a final vector's sums are in
  output logic                  tile_done_o,    // the last vector's sums are in
  // Lane vectors are flat (yosys 0.23 reads no multi-dimensional packed
  // ports): column c is bits [16c +: 16] or [32c +: 32].
  // Starting values. They need no canonicalisation: every row passes through
  // the adder at least once (K >= 1), and the adder reads a zero exponent as
  // zero and any NaN as the canonical NaN.
  input  logic                  init_valid_i,
  input  logic                  init_bank_i,
  input  logic [RowBits-1:0]    init_row_i,
  input  logic [Cols*32-1:0]    init_i,
  // Readout through the output stage, on word_o one cycle later.
  input  logic                  read_bank_i,
  input  logic [RowBits-1:0]    read_row_i,
  input  logic                  bias_en_i,
  input  logic                  relu_en_i,
  input  logic                  bf16_en_i,
  input  logic [Cols*32-1:0]    bias_i,
  output logic [Cols*32-1:0]    word_o
);
  // Sums leave the array Rows + Cols cycles after their vector entered.
  localparam int unsigned Latency = Rows + Cols;
  localparam int unsigned TagBits = RowBits + 3;

  logic                   sum_valid;
  logic [Cols*32-1:0]     sum, total, staged;
  logic [TagBits*Latency-1:0] tags_q;  // stage i at [TagBits*i +: TagBits]
  logic [TagBits-1:0]     tag;
  logic [RowBits:0]       sum_index;
  // Two banks of MaxM rows of fp32 partial sums, bank b at [b*MaxM, ...)
  // (URAM/BRAM on a board).
  logic [Cols*32-1:0]     accumulators_q [2*MaxM];

  systole_array #(.Rows(Rows), .Cols(Cols)) u_array (
    .clk_i,
    .rst_ni,
    .weight_shift_i,
    .weight_bank_i,
    .weight_i,
    .act_valid_i,
    .act_bank_i,
    .act_i,
    .sum_valid_o(sum_valid),
    .sum_o      (sum)
  );

  assign tag       = tags_q[TagBits*(Latency-1) +: TagBits];  // {final, last, bank, row}
  assign sum_index = tag[RowBits:0];

  for (genvar c = 0; c < Cols; c++) begin : g_lane
    assign total[32*c +: 32] = systole_arith::fp32_add(accumulators_q[sum_index][32*c +: 32], sum[32*c +: 32]);
    systole_output_stage u_output (
      .bias_en_i,
      .relu_en_i,
      .bf16_en_i,
      .accumulator_i(accumulators_q[{read_bank_i, read_row_i}][32*c +: 32]),
      .bias_i       (bias_i[32*c +: 32]),
      .word_o       (staged[32*c +: 32])
    );
  end

  logic row_done_d, row_done_q, tile_done_d, tile_done_q;
  assign row_done_d  = sum_valid && tag[TagBits-1];
  assign tile_done_d = sum_valid && tag[TagBits-2];
  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      row_done_q  <= 1'b0;
      tile_done_q <= 1'b0;
    end else begin
      row_done_q  <= row_done_d;
      tile_done_q <= tile_done_d;
    end
  end
  assign row_done_o  = row_done_q;
  assign tile_done_o = tile_done_q;
  // Data: the tags travel with the array's (reset) valid bits, the memory
  // and the output word are named by the controller.
  always_ff @(posedge clk_i) begin
    tags_q <= (tags_q << TagBits) | (TagBits*Latency)'({act_final_i, act_last_i, act_acc_bank_i, act_row_i});
    if (init_valid_i) accumulators_q[{init_bank_i, init_row_i}] <= init_i;
    if (sum_valid) accumulators_q[sum_index] <= total;
    word_o <= staged;
  end
endmodule
