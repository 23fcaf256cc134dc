// An fp32 value read from memory as the datapath sees it (NUMERICS.md,
// "Input canonicalisation"): subnormal -> zero of its sign, NaN -> the
// canonical NaN.
module systole_fp32_canonical (
  input  logic [31:0] value_i,
  output logic [31:0] value_o
);

  always_comb begin
    if (value_i[30:23] == 8'hFF && value_i[22:0] != '0) value_o = systole_pkg::Fp32CanonicalNan;
    else if (value_i[30:23] == '0) value_o = {value_i[31], 31'b0};
    else value_o = value_i;
  end
endmodule
