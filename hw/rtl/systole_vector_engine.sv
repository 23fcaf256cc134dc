// SPDX-License-Identifier: Apache-2.0
// The vector engine: one vector descriptor (hw/spec/NUMERICS.md, "The
// vector engine") over the c ports, which it has to itself while it runs
// (the GEMM engines are idle). It works the vectors a chunk of Cols
// elements at a time, the width of a c row, min(Cols, VectorLanes)
// elements a cycle:
//   - elementwise opcodes: per chunk, read x and whichever of y, z, w the
//     opcode reads, compute Lanes elements per cycle, write the outputs;
//   - sum: per chunk, read row 0 .. rows-1 of x and add each into the
//     running sum, which starts at +0; write it;
//   - to_bf16: per chunk, read a group of rows of x and round them to bf16
//     as they arrive; write the group's chunk packed (a group is one row),
//     or transposed (a group is Group rows; one write per column, Group
//     bf16 values wide).
// A request walker asks for the rows (the reader queues them), and a
// consumer walking the same sequence takes them, so reads run ahead of the
// arithmetic and the writes. A finished chunk's outputs move to a buffer
// of their own, which a writer hands to the c writers while the consumer
// gathers and computes the next chunk (it waits only while the buffer is
// still full). Every input of a chunk is read before its outputs are
// written; a later chunk reads other elements. That, and validation's rule
// that an output is an input's very buffer or overlaps nothing, make the
// result that of the C++ models.
`include "systole_assert.svh"

module systole_vector_engine #(
  parameter int unsigned Cols = 4,
  localparam int unsigned RowBeats = (4 * Cols + systole_pkg::BeatBytes - 1) / systole_pkg::BeatBytes
) (
  input  logic                    clk_i,
  input  logic                    rst_ni,
  input  logic                    clear_i,     // a descriptor starts
  input  logic                    run_i,       // a vector descriptor runs
  input  systole_ctrl_pkg::vec_t  desc_i,
  // Reads (the c group).
  output logic                    req_valid_o,
  input  logic                    req_ready_i,
  output systole_pkg::axi_addr_t  req_addr_o,
  output logic [31:0]             req_bytes_o,
  input  logic                    row_valid_i,
  input  logic [Cols*32-1:0]      row_i,
  output logic                    row_ready_o,
  // Writes (the c group).
  output logic                    wr_valid_o,
  input  logic                    wr_ready_i,
  output systole_pkg::axi_addr_t  wr_addr_o,
  output logic [31:0]             wr_bytes_o,
  output logic [RowBeats*systole_pkg::AxiDataBits-1:0] wr_row_o,
  // Every write handed to the writer.
  output logic                    done_o
);
  // Elements computed per cycle: the spec's lanes, or a whole row.
  localparam int unsigned Lanes = Cols < systole_pkg::VectorLanes ? Cols : systole_pkg::VectorLanes;
  localparam int unsigned Slices = Cols / Lanes;
  localparam int unsigned SliceBits = Slices > 1 ? $clog2(Slices) : 1;
  // Rows a transposed to_bf16 converts together: a column of them is one
  // beat of bf16 values, or a whole c row on a narrow array.
  localparam int unsigned Group = 2 * Cols < systole_pkg::BeatBytes / 2 ? 2 * Cols : systole_pkg::BeatBytes / 2;
  localparam int unsigned GroupBits = $clog2(Group);

  if (Slices * Lanes != Cols) begin : g_check
    $error("Cols must be a multiple of VectorLanes or below it");
  end

  function automatic logic [31:0] min32(logic [31:0] a, logic [31:0] b);
    min32 = a < b ? a : b;
  endfunction

  // Element offsets of a row or a column: validation bounds a row index by
  // MaxVectorRows and an element index by MaxVectorElements, so the
  // products are only as wide as those bounds (64 x 64-bit products took
  // twice the DSP blocks).
  localparam int unsigned RowBits = $clog2(systole_pkg::MaxVectorRows) + 1;
  localparam int unsigned ElementBits = $clog2(systole_pkg::MaxVectorElements) + 1;
  function automatic logic [RowBits+31:0] row_offset(logic [RowBits-1:0] row, logic [31:0] length);
    row_offset = (RowBits+32)'(row) * (RowBits+32)'(length);
  endfunction
  function automatic logic [RowBits+ElementBits-1:0] column_offset(logic [ElementBits-1:0] column,
                                                                   logic [RowBits-1:0] rows);
    column_offset = (RowBits+ElementBits)'(column) * (RowBits+ElementBits)'(rows);
  endfunction

  // Rows per group: a sum's are all its rows.
  logic [31:0] group;
  assign group = desc_i.opcode == 8'(systole_pkg::OpcodeSum) ? desc_i.rows
               : desc_i.opcode == 8'(systole_pkg::OpcodeToBf16) && desc_i.transpose ? 32'(Group)
               : 32'd1;

  // ---------------------------------------------------------------- reads
  systole_ctrl_pkg::vec_walk_t ask_d, ask_q, ask_next;
  logic  ask, unused_ask_last, rows_op;  // (the walker needs no unit ends)
  logic [63:0] ask_base, write_base;  // the asked operand's address, and the written one's

  assign rows_op     = systole_ctrl_pkg::vector_reads_rows(desc_i.opcode[3:0]);
  assign req_valid_o = run_i && !ask_q.done;
  assign ask         = req_valid_o && req_ready_i;
  assign req_bytes_o = 32'd4 * min32(32'(Cols), desc_i.n - ask_q.i0);
  assign req_addr_o  = rows_op
      ? desc_i.x + 64'd4 * (64'(row_offset(RowBits'(ask_q.r0 + ask_q.r), desc_i.stride)) + 64'(ask_q.i0))
      : ask_base + 64'd4 * 64'(ask_q.i0);
  always_comb begin
    unique case (ask_q.op)
      2'd0:    ask_base = desc_i.x;
      2'd1:    ask_base = desc_i.y;
      2'd2:    ask_base = desc_i.z;
      default: ask_base = desc_i.w;
    endcase
  end
  systole_vector_walk #(.Cols(Cols)) u_ask_walk (
    .walk_i(ask_q), .reads_i(desc_i.reads), .group_i(group), .rows_i(desc_i.rows), .n_i(desc_i.n),
    .last_o(unused_ask_last), .next_o(ask_next)
  );
  assign ask_d       = ask ? ask_next : ask_q;

  // ---------------------------------------------------------------- the rest
  // Hand: a finished chunk waits for the write buffer.
  typedef enum logic [1:0] { Gather, Compute, Hand, Done } phase_e;

  // The consumer's state (separate registers: yosys reads no package
  // struct inside a struct).
  phase_e                      phase_d, phase_q;
  systole_ctrl_pkg::vec_walk_t take_d, take_q;  // the next row to take
  systole_ctrl_pkg::vec_walk_t unit_d, unit_q;  // the chunk and group being computed
  logic                        unit_last_d, unit_last_q;  // unit is its group's last read
  logic [SliceBits-1:0]        slice_d, slice_q;  // Compute: the slice of Lanes elements
  logic                        complete;          // the unit is finished: to the buffer
  // The write buffer: a finished unit's outputs and where its writes are.
  // The operand being written (1..3, 4 past the last) or the column
  // (0..Cols), no wider than that: a column picks bf16 values out of a
  // group's rows.
  localparam int unsigned WriteBits = $clog2((Cols > 4 ? Cols : 4) + 1);
  localparam int unsigned ColBits = Cols > 1 ? $clog2(Cols) : 1;
  logic                        out_valid_d, out_valid_q;
  systole_ctrl_pkg::vec_walk_t out_unit_d, out_unit_q;
  logic [WriteBits-1:0]        out_write_d, out_write_q;

  // The operands of a chunk, operand j (x, y, z, w) at [j ChunkBits +:
  // ChunkBits] (a sum in z); results replace their inputs. to_bf16's group,
  // rounded: row g's element c at [16 (g Cols + c) +: 16]. (Flat vectors:
  // yosys reads no whole-array assignments.) Their parts are picked by
  // constant selects under a condition: a select at a variable offset is a
  // shifter as wide as the whole vector, dozens of them in all.
  localparam int unsigned ChunkBits = 32 * Cols;
  logic [4*ChunkBits-1:0]    value_d, value_q;
  logic [Group*Cols*16-1:0]  bf16_d, bf16_q;
  // The buffer's copies: the outputs y, z, w (operand j at [(j - 1)
  // ChunkBits +: ChunkBits]) and the rounded group.
  logic [3*ChunkBits-1:0]    out_value_d, out_value_q;
  logic [Group*Cols*16-1:0]  out_bf16_d, out_bf16_q;
  logic [Cols*16-1:0]        rounded;  // the row taken, rounded to bf16 (to_bf16)
  for (genvar c = 0; c < Cols; c++) begin : g_round
    assign rounded[16 * c +: 16] = systole_arith::fp32_to_bf16(row_i[32 * c +: 32]);
  end

  logic take, take_last, last_slice, last_write, wrote, out_free, is_sum, is_to_bf16;
  systole_ctrl_pkg::vec_walk_t take_next;
  logic [31:0] out_count;    // elements in the buffered unit's chunk
  logic [31:0] out_rows;     // rows in the buffered unit's group
  logic [31:0] lane_y [Lanes];
  logic [31:0] lane_z [Lanes];
  logic [31:0] lane_w [Lanes];

  assign is_sum     = desc_i.opcode == 8'(systole_pkg::OpcodeSum);
  assign is_to_bf16 = desc_i.opcode == 8'(systole_pkg::OpcodeToBf16);
  assign row_ready_o = run_i && phase_q == Gather && !take_q.done;
  assign take        = row_valid_i && row_ready_o;
  systole_vector_walk #(.Cols(Cols)) u_take_walk (
    .walk_i(take_q), .reads_i(desc_i.reads), .group_i(group), .rows_i(desc_i.rows), .n_i(desc_i.n),
    .last_o(take_last), .next_o(take_next)
  );
  assign last_slice  = slice_q == SliceBits'(Slices - 1);
  assign out_count   = min32(32'(Cols), desc_i.n - out_unit_q.i0);
  assign out_rows    = min32(group, desc_i.rows - out_unit_q.r0);

  // The lanes, on slice slice_q of the chunk; Adam's 1 - beta and
  // 1 - gamma are the same for every element.
  localparam logic [31:0] One = 32'h3F80_0000;
  logic [31:0] one_minus_beta, one_minus_gamma;
  assign one_minus_beta  = systole_arith::fp32_sub(One, desc_i.beta);
  assign one_minus_gamma = systole_arith::fp32_sub(One, desc_i.gamma);
  for (genvar l = 0; l < Lanes; l++) begin : g_lane
    localparam int unsigned Bits = 32 * l;
    logic [31:0] x, y, z, w;
    always_comb begin
      x = '0;
      y = '0;
      z = '0;
      w = '0;
      for (int s = 0; s < Slices; s++) begin
        if (Slices == 1 || slice_q == SliceBits'(s)) begin
          x = value_q[0 * ChunkBits + 32 * Lanes * s + Bits +: 32];
          y = value_q[1 * ChunkBits + 32 * Lanes * s + Bits +: 32];
          z = value_q[2 * ChunkBits + 32 * Lanes * s + Bits +: 32];
          w = value_q[3 * ChunkBits + 32 * Lanes * s + Bits +: 32];
        end
      end
    end
    systole_vector_lane u_lane (
      .opcode_i(desc_i.opcode), .nesterov_i(desc_i.nesterov),
      .alpha_i(desc_i.alpha), .beta_i(desc_i.beta), .gamma_i(desc_i.gamma), .delta_i(desc_i.delta),
      .one_minus_beta_i(one_minus_beta), .one_minus_gamma_i(one_minus_gamma),
      .x_i(x), .y_i(y), .z_i(z), .w_i(w), .y_o(lane_y[l]), .z_o(lane_z[l]), .w_o(lane_w[l])
    );
  end

  // The operand the opcode writes after operand `k` (x is never written),
  // or 4.
  function automatic logic [WriteBits-1:0] written_after(logic [3:0] writes, logic [WriteBits-1:0] k);
    written_after = WriteBits'(4);
    for (int i = 3; i >= 1; i--)
      if (writes[i] && WriteBits'(i) > k) written_after = WriteBits'(i);
  endfunction

  // The writes of a unit: each written operand (elementwise, sum), one
  // packed row, or one column per element (transposed to_bf16).
  logic [WriteBits-1:0] next_written;  // the written operand after out_write_q, or 4
  assign next_written = written_after(desc_i.writes, out_write_q);
  assign last_write = is_to_bf16 ? (!desc_i.transpose || 32'(out_write_q) + 32'd1 >= out_count)
                                 : next_written == WriteBits'(4);

  always_comb begin
    unique case (out_write_q[1:0])
      2'd1:    write_base = desc_i.y;
      2'd2:    write_base = desc_i.z;
      default: write_base = desc_i.w;
    endcase
  end

  logic [16*Cols-1:0] group_row;  // a row of to_bf16's group
  always_comb begin
    group_row  = '0;
    wr_row_o   = '0;
    wr_addr_o  = '0;
    wr_bytes_o = '0;
    if (!is_to_bf16) begin
      for (int j = 1; j < 4; j++)
        if (out_write_q[1:0] == 2'(j))
          wr_row_o = (RowBeats*systole_pkg::AxiDataBits)'(out_value_q[ChunkBits * (j - 1) +: ChunkBits]);
      wr_addr_o  = write_base + 64'd4 * 64'(out_unit_q.i0);
      wr_bytes_o = 32'd4 * out_count;
    end else if (!desc_i.transpose) begin
      wr_row_o[0 +: 16 * Cols] = out_bf16_q[0 +: 16 * Cols];
      wr_addr_o  = desc_i.z + 64'd2 * (64'(row_offset(RowBits'(out_unit_q.r0), desc_i.n)) +
                                       64'(out_unit_q.i0));
      wr_bytes_o = 32'd2 * out_count;
    end else begin
      for (int g = 0; g < Group; g++) begin
        group_row = out_bf16_q[16 * Cols * g +: 16 * Cols];
        wr_row_o[16 * g +: 16] = group_row[{out_write_q[ColBits-1:0], 4'b0000} +: 16];
      end
      wr_addr_o  = desc_i.z + 64'd2 * (64'(column_offset(ElementBits'(out_unit_q.i0 + 32'(out_write_q)),
                                                         RowBits'(desc_i.rows))) + 64'(out_unit_q.r0));
      wr_bytes_o = 32'd2 * out_rows;
    end
  end
  assign wr_valid_o = run_i && out_valid_q;
  assign wrote      = wr_valid_o && wr_ready_i;
  // The buffer takes a finished unit when it is empty, or in the cycle its
  // last write is handed over.
  assign out_free   = !out_valid_q || (wrote && last_write);
  assign done_o     = phase_q == Done && !out_valid_q;

  // The consumer: gathers a unit's rows, computes it, and hands it to the
  // buffer (complete).
  always_comb begin
    phase_d     = phase_q;
    take_d      = take_q;
    unit_d      = unit_q;
    unit_last_d = unit_last_q;
    slice_d     = slice_q;
    value_d     = value_q;
    bf16_d      = bf16_q;
    complete    = 1'b0;
    unique case (phase_q)
      Gather: if (take) begin
        take_d      = take_next;
        unit_d      = take_q;
        unit_last_d = take_last;
        if (is_to_bf16) begin
          for (int g = 0; g < Group; g++)
            if (take_q.r[GroupBits-1:0] == GroupBits'(g)) bf16_d[16 * Cols * g +: 16 * Cols] = rounded;
        end else begin
          for (int j = 0; j < 4; j++)
            if (take_q.op == 2'(j)) value_d[ChunkBits * j +: ChunkBits] = row_i;
          // A sum starts at +0.
          if (is_sum && take_q.r == '0) value_d[2 * ChunkBits +: ChunkBits] = '0;
        end
        slice_d = '0;
        // A sum adds each row; the others compute once their unit is in
        // (to_bf16 rounded it on the way).
        if (is_sum) phase_d = Compute;
        else if (take_last) begin
          if (is_to_bf16) complete = 1'b1;
          else phase_d = Compute;
        end
      end
      Compute: begin
        for (int s = 0; s < Slices; s++) begin
          if (Slices == 1 || slice_q == SliceBits'(s)) begin
            for (int l = 0; l < Lanes; l++) begin
              value_d[1 * ChunkBits + 32 * (Lanes * s + l) +: 32] = lane_y[l];
              value_d[2 * ChunkBits + 32 * (Lanes * s + l) +: 32] = lane_z[l];
              value_d[3 * ChunkBits + 32 * (Lanes * s + l) +: 32] = lane_w[l];
            end
          end
        end
        slice_d = slice_q + 1'b1;
        if (last_slice) begin
          if (!is_sum || unit_last_q) complete = 1'b1;
          else phase_d = Gather;
        end
      end
      Hand: complete = 1'b1;
      Done: ;
      default: phase_d = Gather;
    endcase
    if (complete) phase_d = !out_free ? Hand : take_d.done ? Done : Gather;
  end

  // The writer: hands the buffered unit's writes over one at a time, and
  // takes the next unit when it is free.
  always_comb begin
    out_valid_d = out_valid_q;
    out_unit_d  = out_unit_q;
    out_write_d = out_write_q;
    out_value_d = out_value_q;
    out_bf16_d  = out_bf16_q;
    if (wrote) begin
      out_write_d = is_to_bf16 ? out_write_q + 1'b1 : next_written;
      if (last_write) out_valid_d = 1'b0;
    end
    if (complete && out_free) begin
      out_valid_d = 1'b1;
      out_unit_d  = unit_d;
      out_write_d = is_to_bf16 ? '0 : written_after(desc_i.writes, '0);
      out_value_d = value_d[ChunkBits +: 3 * ChunkBits];
      out_bf16_d  = bf16_d;
    end
  end

  // A descriptor's start clears the walk as reset does.
  always_ff @(posedge clk_i) begin
    if (!rst_ni || clear_i) begin
      ask_q       <= '0;
      phase_q     <= Gather;
      take_q      <= '0;
      unit_q      <= '0;
      unit_last_q <= 1'b0;
      slice_q     <= '0;
      out_valid_q <= 1'b0;
      out_unit_q  <= '0;
      out_write_q <= '0;
    end else begin
      ask_q       <= ask_d;
      phase_q     <= phase_d;
      take_q      <= take_d;
      unit_q      <= unit_d;
      unit_last_q <= unit_last_d;
      slice_q     <= slice_d;
      out_valid_q <= out_valid_d;
      out_unit_q  <= out_unit_d;
      out_write_q <= out_write_d;
    end
  end
  // Data: the phase and out_valid_q say when it is valid.
  always_ff @(posedge clk_i) begin
    value_q     <= value_d;
    bf16_q      <= bf16_d;
    out_value_q <= out_value_d;
    out_bf16_q  <= out_bf16_d;
  end

  // Rows come only when asked for, a finished unit waits only for a full
  // buffer, and the writer takes a unit's writes in order.
  `ASSERT(a_taken_rows_asked, take |-> !take_q.done)
  `ASSERT(a_hand_waits_for_the_buffer, phase_q == Hand |-> out_valid_q)
  `ASSERT(a_write_fits, wr_valid_o |-> wr_bytes_o >= 32'd1 && wr_bytes_o <= 32'(4 * Cols))
  // Validation bounds the indices the offsets are narrowed to.
  `ASSERT(a_row_index_fits, req_valid_o && rows_op |-> ask_q.r0 + ask_q.r < 32'(systole_pkg::MaxVectorRows))
  `ASSERT(a_column_index_fits, wr_valid_o && is_to_bf16 && desc_i.transpose |->
                               out_unit_q.i0 + 32'(out_write_q) < 32'(systole_pkg::MaxVectorElements))
endmodule
