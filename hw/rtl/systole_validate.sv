// SPDX-License-Identifier: Apache-2.0
// Which error a command-list header or GEMM descriptor gets: the checks and
// their precedence of hw/spec/systole/validate.h, on one 64-byte beat as the
// command fetch reads it (little-endian: byte i in bits 8i+7..8i). Field
// positions come from systole_pkg, generated from descriptor.h.
module systole_validate #(
  parameter int unsigned Rows = 128  // max_k = MaxKPerRow * Rows
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

  always_comb begin
    if (opcode != 8'(systole_pkg::OpcodeGemm))
      descriptor_error_o = systole_pkg::ErrBadOpcode;
    else if ((flags & ~8'(systole_pkg::FlagAll)) != '0 || reserved0 != '0 || reserved1 != '0)
      descriptor_error_o = systole_pkg::ErrBadFlags;
    else if (m == '0 || n == '0 || k == '0 || m > systole_pkg::MaxM || n > systole_pkg::MaxN ||
             64'(k) > MaxK)
      descriptor_error_o = systole_pkg::ErrBadDimension;
    else if (lda < k || ldb < n || ldc < n)
      descriptor_error_o = systole_pkg::ErrBadLeadingDim;
    else if (a_addr[0] || b_addr[0] || (c_addr & (c_bytes - 64'd1)) != '0 ||
             (has_bias && bias_addr[1:0] != '0))
      descriptor_error_o = systole_pkg::ErrMisalignedAddress;
    else if (!in_range(a_addr, span(m, k, lda, 64'd2), mem_bytes_i) ||
             !in_range(b_addr, span(k, n, ldb, 64'd2), mem_bytes_i) ||
             !in_range(c_addr, span(m, n, ldc, c_bytes), mem_bytes_i) ||
             (has_bias && !in_range(bias_addr, 64'(n) * 64'd4, mem_bytes_i)))
      descriptor_error_o = systole_pkg::ErrAddressOutOfRange;
    else
      descriptor_error_o = systole_pkg::ErrOk;
  end
endmodule
