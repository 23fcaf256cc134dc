// SPDX-License-Identifier: Apache-2.0
// fp32 -> bf16 output conversion: systole_arith::fp32_to_bf16 as a module.
module systole_fp32_to_bf16 (
  input  logic [31:0] value_i,
  output logic [15:0] bf16_o
);
  assign bf16_o = systole_arith::fp32_to_bf16(value_i);
endmodule
