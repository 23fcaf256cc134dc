// The weight-stationary systolic array: Rows x Cols PEs. Rows run along K,
// columns along N. Each cycle one activation vector (Rows bf16 values of one
// row of A, for one K tile) enters; the array skews it so that row r reaches
// PE row r r cycles later, and every column's partial sum starts at +0 in the
// top PE and gains one product per PE row (NUMERICS.md order). The column
// sums leave deskewed, all Cols of them together, Rows + Cols - 1 cycles
// after their activation vector entered.
//
// Weights: Rows cycles of weight_shift_i load one K tile into weight_bank_i,
// bottom row first (the first row shifted in travels furthest). The other
// bank keeps serving activations meanwhile. A bank must not be reloaded
// while activations naming it are still in the array (Rows + Cols cycles
// after the last one entered); the controller guarantees that.
module systole_array #(
  parameter int unsigned Rows = 4,
  parameter int unsigned Cols = 4
) (
  input  logic                       clk_i,
  input  logic                       weight_shift_i,
  input  logic                       weight_bank_i,
  input  logic [Cols*16-1:0]         weight_i,   // column c at [16c +: 16]
  input  logic                       act_valid_i,
  input  logic                       act_bank_i,
  input  logic [Rows*16-1:0]         act_i,      // row r at [16r +: 16]
  output logic                       sum_valid_o,
  output logic [Cols*32-1:0]         sum_o       // column c at [32c +: 32]
);
  // PE grid wiring: activations flow right, sums and weights flow down.
  // Ports are flat vectors and the grid unpacked arrays: yosys 0.23 reads
  // neither multi-dimensional packed ports nor signals.
  logic [15:0] act       [Rows][Cols+1];
  logic        act_valid [Rows][Cols+1];
  logic        act_bank  [Rows][Cols+1];
  logic [31:0] psum      [Rows+1][Cols];
  logic [15:0] weight    [Rows+1][Cols];

  // Input skew: row r is delayed r cycles (row 0 not at all).
  for (genvar r = 0; r < Rows; r++) begin : g_skew
    if (r == 0) begin : g_direct
      assign act[0][0]       = act_i[15:0];
      assign act_valid[0][0] = act_valid_i;
      assign act_bank[0][0]  = act_bank_i;
    end else begin : g_delay
      logic [15:0] data_q [r];
      logic [r-1:0] valid_q, bank_q;
      always_ff @(posedge clk_i) begin
        data_q[0]  <= act_i[16*r +: 16];
        valid_q[0] <= act_valid_i;
        bank_q[0]  <= act_bank_i;
        for (int i = 1; i < r; i++) begin
          data_q[i]  <= data_q[i-1];
          valid_q[i] <= valid_q[i-1];
          bank_q[i]  <= bank_q[i-1];
        end
      end
      assign act[r][0]       = data_q[r-1];
      assign act_valid[r][0] = valid_q[r-1];
      assign act_bank[r][0]  = bank_q[r-1];
    end
  end

  for (genvar c = 0; c < Cols; c++) begin : g_top
    assign psum[0][c]   = '0;  // +0 at the top of every column
    assign weight[0][c] = weight_i[16*c +: 16];
  end

  for (genvar r = 0; r < Rows; r++) begin : g_row
    for (genvar c = 0; c < Cols; c++) begin : g_col
      systole_pe u_pe (
        .clk_i         (clk_i),
        .weight_shift_i(weight_shift_i),
        .weight_bank_i (weight_bank_i),
        .weight_i      (weight[r][c]),
        .weight_o      (weight[r+1][c]),
        .act_valid_i   (act_valid[r][c]),
        .act_bank_i    (act_bank[r][c]),
        .act_i         (act[r][c]),
        .act_valid_o   (act_valid[r][c+1]),
        .act_bank_o    (act_bank[r][c+1]),
        .act_o         (act[r][c+1]),
        .psum_i        (psum[r][c]),
        .psum_o        (psum[r+1][c])
      );
    end
  end

  // Output deskew: column c leaves Rows + c cycles after its vector entered;
  // delay it Cols - 1 - c more so that all columns leave together.
  for (genvar c = 0; c < Cols; c++) begin : g_deskew
    localparam int unsigned Delay = Cols - 1 - c;
    if (Delay == 0) begin : g_direct
      assign sum_o[32*c +: 32] = psum[Rows][c];
    end else begin : g_delay
      logic [31:0] sum_q [Delay];
      always_ff @(posedge clk_i) begin
        sum_q[0] <= psum[Rows][c];
        for (int i = 1; i < Delay; i++) sum_q[i] <= sum_q[i-1];
      end
      assign sum_o[32*c +: 32] = sum_q[Delay-1];
    end
  end

  // The valid bit of the last column's bottom PE row marks the vector.
  assign sum_valid_o = act_valid[Rows-1][Cols];

  // Unused by design: activations leave the grid on the right, weights at
  // the bottom.
  logic [Rows-1:0] unused_right;
  logic [Cols-1:0] unused_bottom;
  for (genvar r = 0; r < Rows; r++) begin : g_unused_right
    assign unused_right[r] = ^{act[r][Cols], act_bank[r][Cols], act_valid[r][Cols]};
  end
  for (genvar c = 0; c < Cols; c++) begin : g_unused_bottom
    assign unused_bottom[c] = ^weight[Rows][c];
  end
  logic unused;
  assign unused = ^{unused_right, unused_bottom};
endmodule
