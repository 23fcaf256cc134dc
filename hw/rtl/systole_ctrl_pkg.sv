// SPDX-License-Identifier: Apache-2.0
// What the kernel's front end and engines share: the decoded descriptor
// and the address arithmetic on it. Layout and flags come from the
// generated systole_pkg, by name.
package systole_ctrl_pkg;

  // A vector descriptor as systole_vector_engine uses it.
  typedef struct packed {
    logic [7:0]  opcode;
    logic        nesterov, transpose;     // the flags (sgd, to_bf16)
    logic [31:0] n, rows, stride;         // rows is 1 for an elementwise opcode
    logic [31:0] alpha, beta, gamma, delta;  // canonical, as the engine reads them
    logic [63:0] x, y, z, w;              // offsets from the c ports' bases
    logic [3:0]  reads, writes;           // operands read (y only when read) and written
  } vec_t;

  // A place in a vector descriptor's read sequence (systole_vector_walk):
  // per group of rows, per chunk, per row of the group, per operand read.
  typedef struct packed {
    logic [31:0] r0;    // the group's first row
    logic [31:0] i0;    // the chunk's first element
    logic [31:0] r;     // the row within the group
    logic [1:0]  op;    // x, y, z, w
    logic        done;  // past the end
  } vec_walk_t;

  // A descriptor as the engines use it (systole_front decodes it): a GEMM
  // descriptor, or (is_vector) a vector descriptor, whose GEMM fields are then
  // zero so that the GEMM engines have nothing to do.
  typedef struct packed {
    logic        is_vector;
    vec_t        vec;
    logic        accumulate;  // C = C + A B (else C = A B)
    logic        bias;        // + bias per column
    logic        relu;
    logic        out_bf16;    // C is bf16 (else fp32)
    logic [31:0] m, n, k, lda, ldb, ldc;
    logic [63:0] a, b, c, bias_addr;  // offsets from the port bases
    logic [31:0] n_tiles, k_tiles;    // N / Cols and K / Rows, rounded up
  } desc_t;

  // True when a descriptor's flags byte sets `flag` (systole_pkg::Flag*).
  function automatic logic has_flag(logic [7:0] flags, logic [7:0] flag);
    has_flag = (flags & flag) != '0;
  endfunction

  // The vector engine's opcode tables (systole_pkg's, from validate.h),
  // indexed by an opcode's low four bits (the others are zero for every
  // vector opcode).
  function automatic logic is_vector_opcode(logic [7:0] opcode);
    is_vector_opcode = opcode < 8'd16 && systole_pkg::VectorReads[4*opcode[3:0] +: 4] != '0;
  endfunction
  function automatic logic [3:0] vector_reads(logic [3:0] op);
    vector_reads = systole_pkg::VectorReads[4*op +: 4];
  endfunction
  function automatic logic [3:0] vector_writes(logic [3:0] op);
    vector_writes = systole_pkg::VectorWrites[4*op +: 4];
  endfunction
  function automatic logic vector_reads_rows(logic [3:0] op);
    vector_reads_rows = systole_pkg::VectorReadsRows[op];
  endfunction

  // Bytes per C element.
  function automatic logic [31:0] c_bytes(logic out_bf16);
    c_bytes = out_bf16 ? 32'd2 : 32'd4;
  endfunction

  // Columns of N tile j of an N-column result, in tiles of `cols`
  // columns (the last one may be partial).
  function automatic logic [31:0] tile_cols(logic [31:0] n, logic [31:0] j, logic [31:0] cols);
    logic [31:0] left;
    left = n - j * cols;
    tile_cols = left < cols ? left : cols;
  endfunction

  // The address of row m of N tile j of C (the init engine reads it, the
  // write engine writes it): base + (m ldc + j cols) elements of `bytes`.
  function automatic logic [63:0] c_row_addr(logic [63:0] base, logic [31:0] ldc, logic [31:0] bytes,
                                             logic [31:0] m, logic [31:0] j, logic [31:0] cols);
    c_row_addr = base + (64'(m) * 64'(ldc) + 64'(j) * 64'(cols)) * 64'(bytes);
  endfunction

endpackage
