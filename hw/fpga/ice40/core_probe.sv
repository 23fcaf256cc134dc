// SPDX-License-Identifier: Apache-2.0
// A fit probe for iCE40 parts: systole_core with every input taken from a
// shift register loaded through one pin and every output folded into one
// registered pin, so that nextpnr places and times the core itself (its
// ports far outnumber a 48-pin package's) on a part with a clock, one
// input and one output. Not a design to run: fit.sh measures with it.
module systole_core_probe #(
  parameter int unsigned Rows = 2,
  parameter int unsigned Cols = 1,
  parameter int unsigned MaxM = 256,
  localparam int unsigned RowBits = $clog2(MaxM)
) (
  input  logic clk_i,
  input  logic din_i,
  output logic dout_o
);
  // The core's inputs, in port order.
  typedef struct packed {
    logic                 rst_n;
    logic                 weight_shift;
    logic                 weight_bank;
    logic [Cols*16-1:0]   weight;
    logic                 act_valid;
    logic                 act_bank;
    logic [Rows*16-1:0]   act;
    logic                 act_acc_bank;
    logic [RowBits-1:0]   act_row;
    logic                 act_final;
    logic                 act_last;
    logic                 init_valid;
    logic                 init_bank;
    logic [RowBits-1:0]   init_row;
    logic [Cols*32-1:0]   init;
    logic                 read_bank;
    logic [RowBits-1:0]   read_row;
    logic                 bias_en;
    logic                 relu_en;
    logic                 bf16_en;
    logic [Cols*32-1:0]   bias;
  } inputs_t;

  localparam int unsigned InBits = 14 + 80 * Cols + 16 * Rows + 3 * RowBits;  // of inputs_t

  logic [InBits-1:0]  bits_q;
  inputs_t            in_q;
  logic [Cols*32-1:0] word;
  logic               row_done, tile_done, dout_q;

  always_ff @(posedge clk_i) begin
    bits_q <= {bits_q[InBits-2:0], din_i};
    dout_q <= ^{word, row_done, tile_done};
  end
  assign in_q   = bits_q;
  assign dout_o = dout_q;

  systole_core #(.Rows(Rows), .Cols(Cols), .MaxM(MaxM)) u_core (
    .clk_i,
    .rst_ni        (in_q.rst_n),
    .weight_shift_i(in_q.weight_shift),
    .weight_bank_i (in_q.weight_bank),
    .weight_i      (in_q.weight),
    .act_valid_i   (in_q.act_valid),
    .act_bank_i    (in_q.act_bank),
    .act_i         (in_q.act),
    .act_acc_bank_i(in_q.act_acc_bank),
    .act_row_i     (in_q.act_row),
    .act_final_i   (in_q.act_final),
    .act_last_i    (in_q.act_last),
    .row_done_o    (row_done),
    .tile_done_o   (tile_done),
    .init_valid_i  (in_q.init_valid),
    .init_bank_i   (in_q.init_bank),
    .init_row_i    (in_q.init_row),
    .init_i        (in_q.init),
    .read_bank_i   (in_q.read_bank),
    .read_row_i    (in_q.read_row),
    .bias_en_i     (in_q.bias_en),
    .relu_en_i     (in_q.relu_en),
    .bf16_en_i     (in_q.bf16_en),
    .bias_i        (in_q.bias),
    .word_o        (word)
  );
endmodule
