// fp32 -> bf16 (NUMERICS.md): NaN -> 0x7FC0; a zero or subnormal input ->
// zero of its sign (flushed before rounding); otherwise round to nearest,
// ties to even, at bit 16, a carry out of the largest finite giving Inf.
module systole_fp32_to_bf16 (
  input  logic [31:0] value_i,
  output logic [15:0] bf16_o
);

  logic round_up;
  assign round_up = value_i[15] && ((value_i[14:0] != '0) || value_i[16]);

  always_comb begin
    if (value_i[30:23] == 8'hFF && value_i[22:0] != '0) bf16_o = systole_pkg::Bf16CanonicalNan;
    else if (value_i[30:23] == '0) bf16_o = {value_i[31], 15'b0};
    else bf16_o = value_i[31:16] + 16'(round_up);  // carries into Inf on overflow
  end
endmodule
