// SPDX-License-Identifier: Apache-2.0
// What the kernel's front end and engines share: the decoded descriptor
// and the address arithmetic on it. Layout and flags come from the
// generated systole_pkg, by name.
package systole_ctrl_pkg;

  // A GEMM descriptor as the engines use it (systole_front decodes it).
  typedef struct packed {
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
