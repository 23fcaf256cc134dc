// SPDX-License-Identifier: Apache-2.0
// The write-back engine: N tile j's rows go out through the output stage
// as they become final (row_done_i: the last K tile's sums of the next row
// are in; tile_done_i: all of them are), one write request per row
// carrying the whole row, packed to C's element size (the c ports'
// systole_striped_writer sends its beats). The core's word_i holds the
// named row's output-stage words, so a request takes them and names the
// next row in the same cycle: a row per cycle while ports are free.
`include "systole_assert.svh"

module systole_write_engine #(
  parameter int unsigned Cols = 4,
  parameter int unsigned MaxM = 256,
  localparam int unsigned RowBits = $clog2(MaxM),
  // The row in whole beats.
  localparam int unsigned RowBeats = (4 * Cols + systole_pkg::BeatBytes - 1) / systole_pkg::BeatBytes,
  localparam int unsigned PackedBits = RowBeats * systole_pkg::AxiDataBits
) (
  input  logic                    clk_i,
  input  logic                    rst_ni,
  input  logic                    clear_i,      // a descriptor starts
  input  logic                    run_i,        // it computes
  /* verilator lint_off UNUSEDSIGNAL */  // the fields this engine needs
  input  systole_ctrl_pkg::desc_t desc_i,
  /* verilator lint_on UNUSEDSIGNAL */
  input  logic                    row_done_i,   // a row of the tile being summed is final
  input  logic                    tile_done_i,  // an N tile's sums are all in
  // Rows out (offsets from the c ports' base); bytes past req_bytes_o are
  // not written.
  output logic                    req_valid_o,
  input  logic                    req_ready_i,
  output systole_pkg::axi_addr_t  req_addr_o,
  output logic [31:0]             req_bytes_o,
  output logic [PackedBits-1:0]   req_row_o,
  // The accumulator row the core reads out, and its words.
  output logic                    read_bank_o,
  output logic [RowBits-1:0]      read_row_o,
  input  logic [Cols*32-1:0]      word_i,
  output logic [31:0]             written_o     // N tiles written back
);
  typedef struct packed {
    logic [31:0] summed;  // N tiles whose sums are in
    logic [31:0] finals;  // rows of N tile `summed` that are final
    logic [31:0] j;       // the N tile being written
    logic [31:0] m;       // its row being written
  } state_t;
  state_t              s_d, s_q;
  logic [31:0]         c_bytes;
  logic                accept, last_row;

  assign c_bytes  = systole_ctrl_pkg::c_bytes(desc_i.out_bf16);
  assign req_valid_o  = run_i && s_q.j < desc_i.n_tiles &&
                        (s_q.summed > s_q.j || (s_q.summed == s_q.j && s_q.m < s_q.finals));
  assign req_addr_o   = systole_ctrl_pkg::c_row_addr(desc_i.c, desc_i.ldc, c_bytes, s_q.m, s_q.j, Cols);
  assign req_bytes_o  = systole_ctrl_pkg::tile_cols(desc_i.n, s_q.j, Cols) * c_bytes;
  assign accept       = req_valid_o && req_ready_i;
  assign last_row     = s_q.m + 32'd1 == desc_i.m;
  // The row the core reads out: the next one as soon as this one is taken.
  assign read_bank_o  = (accept && last_row) ? ~s_q.j[0] : s_q.j[0];
  assign read_row_o   = !accept ? RowBits'(s_q.m) : last_row ? '0 : RowBits'(s_q.m + 32'd1);
  assign written_o    = s_q.j;

  always_comb begin
    s_d = s_q;
    if (clear_i) begin
      s_d = '0;
    end else begin
      if (row_done_i) s_d.finals = s_q.finals + 32'd1;
      if (tile_done_i) begin
        s_d.summed = s_q.summed + 32'd1;
        s_d.finals = '0;
      end
      if (accept) begin
        s_d.m = last_row ? '0 : s_q.m + 32'd1;
        if (last_row) s_d.j = s_q.j + 32'd1;
      end
    end
  end

  always_ff @(posedge clk_i) begin
    if (!rst_ni) s_q <= '0;
    else s_q <= s_d;
  end
  // The row's words, packed to C's element size: byte i at [8i +: 8].
  always_comb begin
    req_row_o = '0;
    for (int c = 0; c < Cols; c++) begin
      if (desc_i.out_bf16) req_row_o[16*c +: 16] = word_i[32*c +: 16];
      else req_row_o[32*c +: 32] = word_i[32*c +: 32];
    end
  end

  // The array finishes no more N tiles than the descriptor has.
  `ASSERT_DISABLE(a_tiles_counted, tile_done_i |-> s_q.summed < desc_i.n_tiles, !rst_ni || clear_i)
endmodule
