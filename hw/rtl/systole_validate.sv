// SPDX-License-Identifier: Apache-2.0
// Which error a command-list header or descriptor (GEMM or vector) gets:
// the checks and their precedence of hw/spec/systole/validate.h, on one
// 64-byte beat as the command fetch reads it (little-endian: byte i in bits
// 8i+7..8i). Field positions and the vector opcodes' tables come from
// systole_pkg, generated from descriptor.h and validate.h.
module systole_validate #(
  parameter int unsigned Rows = 128,       // max_k = MaxKPerRow * Rows
  parameter bit          VectorEngine = 1'b1  // else vector opcodes are unknown
) (
  input  logic [511:0] beat_i,
  input  logic [63:0]  mem_bytes_i,   // window each port may address
  output logic [31:0]  header_error_o,
  output logic [31:0]  descriptor_error_o
);
  localparam logic [63:0] MaxK = 64'(systole_pkg::MaxKPerRow) * 64'(Rows);

  function automatic logic [31:0] field32(logic [511:0] beat, int unsigned byte_offset);
    field32 = beat[8*byte_offset +: 32];
  endfunction
  function automatic logic [63:0] field64(logic [511:0] beat, int unsigned byte_offset);
    field64 = beat[8*byte_offset +: 64];
  endfunction
  // [addr, addr + bytes) inside [0, mem_bytes), without overflow.
  function automatic logic in_range(logic [63:0] addr, logic [63:0] bytes, logic [63:0] mem_bytes);
    in_range = (addr <= mem_bytes) && (bytes <= mem_bytes - addr);
  endfunction
  // Bytes from the first to the last element of a rows x cols matrix.
  // (Only consulted after the dimension check, so rows >= 1.)
  function automatic logic [63:0] span(logic [31:0] rows, logic [31:0] cols, logic [31:0] ld,
                                      logic [63:0] element_bytes);
    logic [31:0] last_row;
    last_row = rows - 32'd1;
    span = (64'(last_row) * 64'(ld) + 64'(cols)) * element_bytes;
  endfunction

  // Header.
  logic [31:0] count;
  assign count = field32(beat_i, systole_pkg::HdrCountByte);
  always_comb begin
    if (field32(beat_i, systole_pkg::HdrMagicByte) != systole_pkg::CommandListMagic)
      header_error_o = systole_pkg::ErrBadMagic;
    else if (beat_i[8*systole_pkg::HdrVersionMajorByte +: 16] != 16'(systole_pkg::VersionMajor))
      header_error_o = systole_pkg::ErrBadVersion;
    else if (count == '0 || count > systole_pkg::MaxDescriptors)
      header_error_o = systole_pkg::ErrBadCount;
    else if (beat_i[511:8*systole_pkg::HdrReservedByte] != '0)
      header_error_o = systole_pkg::ErrBadFlags;
    else
      header_error_o = systole_pkg::ErrOk;
  end

  // Descriptor.
  logic [7:0]  opcode, flags;
  logic [15:0] reserved0;
  logic [31:0] m, n, k, lda, ldb, ldc, reserved1;
  logic [63:0] a_addr, b_addr, c_addr, bias_addr, c_bytes;
  logic        has_bias;
  assign opcode    = beat_i[8*systole_pkg::DescOpcodeByte +: 8];
  assign flags     = beat_i[8*systole_pkg::DescFlagsByte +: 8];
  assign reserved0 = beat_i[8*systole_pkg::DescReserved0Byte +: 16];
  assign m         = field32(beat_i, systole_pkg::DescMByte);
  assign n         = field32(beat_i, systole_pkg::DescNByte);
  assign k         = field32(beat_i, systole_pkg::DescKByte);
  assign lda       = field32(beat_i, systole_pkg::DescLdaByte);
  assign ldb       = field32(beat_i, systole_pkg::DescLdbByte);
  assign ldc       = field32(beat_i, systole_pkg::DescLdcByte);
  assign reserved1 = field32(beat_i, systole_pkg::DescReserved1Byte);
  assign a_addr    = field64(beat_i, systole_pkg::DescAAddrByte);
  assign b_addr    = field64(beat_i, systole_pkg::DescBAddrByte);
  assign c_addr    = field64(beat_i, systole_pkg::DescCAddrByte);
  assign bias_addr = field64(beat_i, systole_pkg::DescBiasAddrByte);
  assign has_bias  = (flags & 8'(systole_pkg::FlagBias)) != '0;
  assign c_bytes   = (flags & 8'(systole_pkg::FlagOutputBf16)) != '0 ? 64'd2 : 64'd4;

  logic [31:0] gemm_error, vector_error;
  assign descriptor_error_o = systole_ctrl_pkg::is_vector_opcode(opcode) ? vector_error : gemm_error;

  always_comb begin
    if (opcode != 8'(systole_pkg::OpcodeGemm))
      gemm_error = systole_pkg::ErrBadOpcode;
    else if ((flags | 8'(systole_pkg::FlagAll)) != 8'(systole_pkg::FlagAll) || reserved0 != '0 || reserved1 != '0)
      gemm_error = systole_pkg::ErrBadFlags;
    else if (m == '0 || n == '0 || k == '0 || m > systole_pkg::MaxM || n > systole_pkg::MaxN ||
             64'(k) > MaxK)
      gemm_error = systole_pkg::ErrBadDimension;
    else if (lda < k || ldb < n || ldc < n)
      gemm_error = systole_pkg::ErrBadLeadingDim;
    else if (a_addr[0] || b_addr[0] || (c_addr & (c_bytes - 64'd1)) != '0 ||
             (has_bias && bias_addr[1:0] != '0))
      gemm_error = systole_pkg::ErrMisalignedAddress;
    else if (!in_range(a_addr, span(m, k, lda, 64'd2), mem_bytes_i) ||
             !in_range(b_addr, span(k, n, ldb, 64'd2), mem_bytes_i) ||
             !in_range(c_addr, span(m, n, ldc, c_bytes), mem_bytes_i) ||
             (has_bias && !in_range(bias_addr, 64'(n) * 64'd4, mem_bytes_i)))
      gemm_error = systole_pkg::ErrAddressOutOfRange;
    else
      gemm_error = systole_pkg::ErrOk;
  end

  // Vector descriptor (validate_vector_descriptor): the same bytes read as
  // n, rows, stride, four scalars and the x, y, z, w addresses.
  logic [31:0] vec_rows, vec_stride;
  logic [63:0] addr [4];
  logic [63:0] bytes [4];  // each operand's span
  logic [63:0] ends [4];   // and its end
  logic [3:0]  reads, writes, uses;
  logic [7:0]  allowed_flags;
  logic [3:0]  scalars;
  logic        rows_op, scalars_clear, unused_clear, aligned, in_bounds, overlapping;
  assign vec_rows      = field32(beat_i, systole_pkg::VecRowsByte);
  assign vec_stride    = field32(beat_i, systole_pkg::VecStrideByte);
  assign addr[0]       = field64(beat_i, systole_pkg::VecXAddrByte);
  assign addr[1]       = field64(beat_i, systole_pkg::VecYAddrByte);
  assign addr[2]       = field64(beat_i, systole_pkg::VecZAddrByte);
  assign addr[3]       = field64(beat_i, systole_pkg::VecWAddrByte);
  assign reads         = systole_ctrl_pkg::vector_reads(opcode[3:0]);
  assign writes        = systole_ctrl_pkg::vector_writes(opcode[3:0]);
  assign uses          = reads | writes;
  assign rows_op       = systole_ctrl_pkg::vector_reads_rows(opcode[3:0]);
  assign allowed_flags = systole_pkg::VectorFlags[8*opcode[3:0] +: 8];
  assign scalars       = systole_pkg::VectorScalars[4*opcode[3:0] +: 4];
  // (n is the GEMM field m's bytes.)
  always_comb begin
    for (int i = 0; i < 4; i++) bytes[i] = 64'(m) * 64'd4;
    if (rows_op) bytes[0] = span(vec_rows, m, vec_stride, 64'd4);
    if (opcode == 8'(systole_pkg::OpcodeToBf16)) bytes[2] = 64'(vec_rows) * 64'(m) * 64'd2;
    scalars_clear = 1'b1;
    unused_clear  = 1'b1;
    aligned       = 1'b1;
    in_bounds     = 1'b1;
    overlapping   = 1'b0;
    for (int i = 0; i < 4; i++) begin
      if (32'(i) >= 32'(scalars) && field32(beat_i, systole_pkg::VecAlphaByte + 4 * i) != '0)
        scalars_clear = 1'b0;
      if (!uses[i] && addr[i] != '0) unused_clear = 1'b0;
      // to_bf16 writes bf16 to z; everything else is fp32.
      if (uses[i] && (addr[i][0] || (!(i == 2 && opcode == 8'(systole_pkg::OpcodeToBf16)) && addr[i][1])))
        aligned = 1'b0;
      if (uses[i] && !in_range(addr[i], bytes[i], mem_bytes_i)) in_bounds = 1'b0;
    end
    // An output is the very buffer of an input it alone writes, or overlaps
    // no other operand: each pair once (the ends are only consulted once
    // every span is in range, so they do not overflow).
    for (int i = 0; i < 4; i++) ends[i] = addr[i] + bytes[i];
    for (int i = 0; i < 4; i++)
      for (int j = i + 1; j < 4; j++)
        if (uses[i] && uses[j] && (writes[i] || writes[j]) &&
            !(addr[i] == addr[j] && bytes[i] == bytes[j] && !(writes[i] && writes[j])) &&
            ends[i] > addr[j] && ends[j] > addr[i])
          overlapping = 1'b1;
  end

  always_comb begin
    if (!VectorEngine)
      vector_error = systole_pkg::ErrBadOpcode;
    else if ((flags & ~allowed_flags) != '0 || reserved0 != '0 || !scalars_clear || !unused_clear ||
             (!rows_op && (vec_rows != '0 || vec_stride != '0)))
      vector_error = systole_pkg::ErrBadFlags;
    else if (m == '0 || m > systole_pkg::MaxVectorElements ||
             (rows_op && (vec_rows == '0 || vec_rows > systole_pkg::MaxVectorRows)))
      vector_error = systole_pkg::ErrBadDimension;
    else if (rows_op && vec_stride < m)
      vector_error = systole_pkg::ErrBadLeadingDim;
    else if (!aligned)
      vector_error = systole_pkg::ErrMisalignedAddress;
    else if (!in_bounds)
      vector_error = systole_pkg::ErrAddressOutOfRange;
    else if (overlapping)
      vector_error = systole_pkg::ErrOverlappingBuffers;
    else
      vector_error = systole_pkg::ErrOk;
  end
endmodule
