// bf16 x bf16 -> fp32 product (hw/spec/NUMERICS.md, "Product"). The 8-bit
// significands multiply to 16 bits, so the product is exact unless it leaves
// the fp32 normal range: then +-Inf above, a signed zero below. Subnormal
// inputs read as zero; Inf x 0 and NaN give the canonical NaN.
module systole_bf16_mul (
  input  logic [15:0] a_i,
  input  logic [15:0] b_i,
  output logic [31:0] product_o
);

  logic       sign;
  logic [7:0] a_exp, b_exp;
  logic       a_nan, b_nan, a_inf, b_inf, a_zero, b_zero;
  logic [15:0] significand;  // (1.fa * 1.fb) * 2^14, in [2^14, 2^16)
  logic signed [9:0] exponent;  // biased exponent of the product
  logic [22:0] fraction;

  assign sign   = a_i[15] ^ b_i[15];
  assign a_exp  = a_i[14:7];
  assign b_exp  = b_i[14:7];
  assign a_nan  = (a_exp == 8'hFF) && (a_i[6:0] != '0);
  assign b_nan  = (b_exp == 8'hFF) && (b_i[6:0] != '0);
  assign a_inf  = (a_exp == 8'hFF) && (a_i[6:0] == '0);
  assign b_inf  = (b_exp == 8'hFF) && (b_i[6:0] == '0);
  assign a_zero = (a_exp == '0);  // zero or subnormal
  assign b_zero = (b_exp == '0);
  assign significand = {1'b1, a_i[6:0]} * {1'b1, b_i[6:0]};

  always_comb begin
    exponent = $signed({2'b00, a_exp}) + $signed({2'b00, b_exp}) - 10'sd127;
    fraction = {significand[13:0], 9'b0};
    if (significand[15]) begin  // product in [2, 4): renormalise
      exponent = exponent + 10'sd1;
      fraction = {significand[14:0], 8'b0};
    end
  end

  always_comb begin
    if (a_nan || b_nan || (a_inf && b_zero) || (b_inf && a_zero)) begin
      product_o = systole_pkg::Fp32CanonicalNan;
    end else if (a_inf || b_inf) begin
      product_o = {sign, 8'hFF, 23'b0};
    end else if (a_zero || b_zero || exponent <= 0) begin
      product_o = {sign, 31'b0};  // zero operand, or below the normal range
    end else if (exponent >= 10'sd255) begin
      product_o = {sign, 8'hFF, 23'b0};
    end else begin
      product_o = {sign, exponent[7:0], fraction};
    end
  end
endmodule
