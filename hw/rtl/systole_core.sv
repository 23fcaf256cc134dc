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
// the last one of an N tile also tile_done_o. The controller never fills a
// bank the sums accumulate into, and reads a row out only once it is final.
`include "systole_assert.svh"

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
  // Readout through the output stage, on word_o in the next cycle (the
  // settings and the bias are taken with the row).
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
  localparam int unsigned Width   = Cols * 32;

  logic                   sum_valid;
  logic [Width-1:0]       sum, total;
  logic [TagBits*Latency-1:0] tags_q;  // stage i at [TagBits*i +: TagBits]
  logic [TagBits-1:0]     tag;
  logic [RowBits-1:0]     next_row;  // of the sums leaving next cycle

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

  // The tag of the sums leaving now, and the row of those leaving next
  // cycle (read from the accumulators now).
  assign tag      = tags_q[TagBits*(Latency-1) +: TagBits];  // {final, last, bank, row}
  assign next_row = tags_q[TagBits*(Latency-2) +: RowBits];

  // The accumulator memory: two banks of MaxM rows of fp32 partial sums,
  // each with one write port and two registered read ports, so that it
  // maps to block RAM (BRAM/URAM; on iCE40 two EBR copies). A bank's write
  // port takes the sums that name it, else the starting values (the
  // controller never lets both write one bank). Its sum port reads the row
  // of the sums that arrive next cycle; its readout port the row the
  // controller reads out, which may lie in the bank the sums still
  // accumulate into (a row is read out once final). A read in the cycle of
  // a write to its row returns the written value (forwarded: block RAMs
  // differ in what they return then).
  logic [Width-1:0]   acc_operand [2];  // row next_row of each bank, a cycle later
  logic [Width-1:0]   out_operand [2];  // row read_row_i of each bank, a cycle later

  for (genvar b = 0; b < 2; b++) begin : g_bank
    logic [Width-1:0]   rows_q [MaxM];
    logic               sum_hit, init_hit, we;
    logic [RowBits-1:0] waddr;
    logic [Width-1:0]   wdata, acc_q, out_q, fwd_data_q;
    logic               acc_fwd_q, out_fwd_q;
    assign sum_hit  = sum_valid && tag[RowBits] == 1'(b);
    assign init_hit = init_valid_i && init_bank_i == 1'(b);
    assign we       = sum_hit || init_hit;
    assign waddr    = sum_hit ? tag[RowBits-1:0] : init_row_i;
    assign wdata    = sum_hit ? total : init_i;
    always_ff @(posedge clk_i) begin
      if (we) rows_q[waddr] <= wdata;
      acc_q      <= rows_q[next_row];
      out_q      <= rows_q[read_row_i];
      acc_fwd_q  <= we && waddr == next_row;
      out_fwd_q  <= we && waddr == read_row_i;
      fwd_data_q <= wdata;
    end
    assign acc_operand[b] = acc_fwd_q ? fwd_data_q : acc_q;
    assign out_operand[b] = out_fwd_q ? fwd_data_q : out_q;
    `ASSERT(a_one_writer, !(sum_hit && init_hit))
  end

  // The readout's settings travel with its read.
  logic             read_bank_q, bias_en_q, relu_en_q, bf16_en_q;
  logic [Width-1:0] bias_q;
  always_ff @(posedge clk_i) begin
    read_bank_q <= read_bank_i;
    bias_en_q   <= bias_en_i;
    relu_en_q   <= relu_en_i;
    bf16_en_q   <= bf16_en_i;
    bias_q      <= bias_i;
  end

  for (genvar c = 0; c < Cols; c++) begin : g_lane
    assign total[32*c +: 32] = systole_arith::fp32_add(acc_operand[tag[RowBits]][32*c +: 32], sum[32*c +: 32]);
    systole_output_stage u_output (
      .bias_en_i    (bias_en_q),
      .relu_en_i    (relu_en_q),
      .bf16_en_i    (bf16_en_q),
      .accumulator_i(out_operand[read_bank_q][32*c +: 32]),
      .bias_i       (bias_q[32*c +: 32]),
      .word_o       (word_o[32*c +: 32])
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
  // Data: the tags travel beside the array's (reset) valid bits.
  always_ff @(posedge clk_i) begin
    tags_q <= (tags_q << TagBits) | (TagBits*Latency)'({act_final_i, act_last_i, act_acc_bank_i, act_row_i});
  end
`ifndef SYNTHESIS
  // A vector's tag leaves the line in the cycle its sums leave the array.
  logic [Latency-1:0] pending_q;
  always_ff @(posedge clk_i) pending_q <= !rst_ni ? '0 : {pending_q[Latency-2:0], act_valid_i};
  `ASSERT(a_tags_beside_sums, sum_valid == pending_q[Latency-1])
`endif
endmodule
