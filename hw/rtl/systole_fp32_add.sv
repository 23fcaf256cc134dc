// SPDX-License-Identifier: Apache-2.0
// fp32 + fp32: systole_arith::fp32_add as a module (the accumulator memory,
// the bias add, the arithmetic tests).
module systole_fp32_add (
  input  logic [31:0] a_i,
  input  logic [31:0] b_i,
  output logic [31:0] sum_o
);
  assign sum_o = systole_arith::fp32_add(a_i, b_i);
endmodule
