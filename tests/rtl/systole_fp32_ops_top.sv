// SPDX-License-Identifier: Apache-2.0
// The vector engine's fp32 operations of systole_arith, side by side, for
// the arithmetic tests.
module systole_fp32_ops_top (
  input  logic [31:0] a_i,
  input  logic [31:0] b_i,
  output logic [31:0] sub_o,
  output logic [31:0] mul_o,
  output logic [31:0] div_o,
  output logic [31:0] sqrt_o  // of a
);
  assign sub_o  = systole_arith::fp32_sub(a_i, b_i);
  assign mul_o  = systole_arith::fp32_mul(a_i, b_i);
  assign div_o  = systole_arith::fp32_div(a_i, b_i);
  assign sqrt_o = systole_arith::fp32_sqrt(a_i);
endmodule
