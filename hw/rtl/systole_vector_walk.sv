// SPDX-License-Identifier: Apache-2.0
// The vector engine's read sequence, one step: the read after `walk_i`
// (per group of rows, per chunk of Cols elements, per row of the group, per
// operand the opcode reads), and whether `walk_i` is the last read of its
// chunk's group (a unit the engine then computes and writes). The request
// walker and the consumer each have one.
module systole_vector_walk #(
  parameter int unsigned Cols = 4
) (
  input  systole_ctrl_pkg::vec_walk_t walk_i,
  input  logic [3:0]                  reads_i,   // the operands read
  input  logic [31:0]                 group_i,   // rows per group
  input  logic [31:0]                 rows_i,    // rows (1 for an elementwise opcode)
  input  logic [31:0]                 n_i,       // elements per row
  output logic                        last_o,
  output systole_ctrl_pkg::vec_walk_t next_o
);
  logic [2:0]  op;         // the operand read after walk_i's, or 4
  logic [31:0] group_rows;

  always_comb begin
    op = 3'd4;
    for (int i = 3; i >= 0; i--)
      if (reads_i[i] && 2'(i) > walk_i.op) op = 3'(i);
  end
  assign group_rows = group_i < rows_i - walk_i.r0 ? group_i : rows_i - walk_i.r0;
  assign last_o     = op == 3'd4 && walk_i.r + 32'd1 >= group_rows;

  always_comb begin
    next_o = walk_i;
    if (op != 3'd4) begin
      next_o.op = op[1:0];
    end else begin
      next_o.op = 2'd0;  // x, always read first
      if (!last_o) begin
        next_o.r = walk_i.r + 32'd1;
      end else begin
        next_o.r = '0;
        if (walk_i.i0 + 32'(Cols) < n_i) begin
          next_o.i0 = walk_i.i0 + 32'(Cols);
        end else begin
          next_o.i0 = '0;
          if (walk_i.r0 + group_i < rows_i) next_o.r0 = walk_i.r0 + group_i;
          else next_o.done = 1'b1;
        end
      end
    end
  end
endmodule
