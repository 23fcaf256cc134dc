// SPDX-License-Identifier: Apache-2.0
// bf16 x bf16 -> fp32 product: systole_arith::bf16_mul as a module, for the
// arithmetic tests and the synthesis check.
module systole_bf16_mul (
  input  logic [15:0] a_i,
  input  logic [15:0] b_i,
  output logic [31:0] product_o
);
  assign product_o = systole_arith::bf16_mul(a_i, b_i);
endmodule
