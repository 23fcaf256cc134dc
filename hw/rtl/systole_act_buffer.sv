// SPDX-License-Identifier: Apache-2.0
// The activation buffer: a descriptor's block of A, MaxM rows of MaxK bf16
// values (zero-padded along K), held as one K tile (Rows values) per word:
// the load engine writes a row's K tile as it arrives and the stream
// engine reads one per cycle. BRAM/URAM on a board.
module systole_act_buffer #(
  parameter int unsigned Rows = 4,
  parameter int unsigned MaxM = 256,
  localparam int unsigned KTiles = systole_pkg::MaxKPerRow,
  localparam int unsigned RowBits = $clog2(MaxM),
  localparam int unsigned TileBits = $clog2(KTiles)
) (
  input  logic                 clk_i,
  input  logic                 write_i,
  input  logic [RowBits-1:0]   write_row_i,
  input  logic [31:0]          write_k_tile_i,
  input  logic [Rows*16-1:0]   write_data_i,
  input  logic [RowBits-1:0]   read_row_i,
  input  logic [31:0]          read_k_tile_i,
  output logic [Rows*16-1:0]   read_data_o
);
  logic [Rows*16-1:0] words_q [MaxM * KTiles];

  always_ff @(posedge clk_i) if (write_i) words_q[{write_row_i, TileBits'(write_k_tile_i)}] <= write_data_i;
  assign read_data_o = words_q[{read_row_i, TileBits'(read_k_tile_i)}];

  logic unused;
  assign unused = ^{write_k_tile_i[31:TileBits], read_k_tile_i[31:TileBits]};
endmodule
