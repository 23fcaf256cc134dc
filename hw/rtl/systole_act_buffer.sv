// SPDX-License-Identifier: Apache-2.0
// The activation buffer: a descriptor's block of A, MaxM rows of MaxK bf16
// values (zero-padded along K), written a row at a time as A arrives and
// read a K tile (Rows values) at a time as activations stream. BRAM/URAM
// on a board.
module systole_act_buffer #(
  parameter int unsigned Rows = 4,
  parameter int unsigned MaxM = 256,
  parameter int unsigned MaxK = 32,
  localparam int unsigned RowBits = $clog2(MaxM)
) (
  input  logic                 clk_i,
  input  logic                 write_i,
  input  logic [RowBits-1:0]   write_row_i,
  input  logic [MaxK*16-1:0]   write_data_i,
  input  logic [RowBits-1:0]   read_row_i,
  input  logic [31:0]          read_k_tile_i,
  output logic [Rows*16-1:0]   read_data_o
);
  logic [MaxK*16-1:0] rows_q [MaxM];

  always_ff @(posedge clk_i) if (write_i) rows_q[write_row_i] <= write_data_i;
  assign read_data_o = rows_q[read_row_i][Rows*16*read_k_tile_i +: Rows*16];
endmodule
