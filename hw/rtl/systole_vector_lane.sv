// SPDX-License-Identifier: Apache-2.0
// One lane of the vector engine: an elementwise opcode on one element
// (hw/spec/systole/vector_ops.h's vector_block and sum, in
// systole_arith's fp32 operations). The operands come as memory holds
// them and are canonicalised here; the scalars come canonical. An output
// the opcode does not write is its input unchanged. Combinational: the
// engine registers what it writes.
module systole_vector_lane (
  input  logic [7:0]  opcode_i,
  input  logic        nesterov_i,
  input  logic [31:0] alpha_i,
  input  logic [31:0] beta_i,
  input  logic [31:0] gamma_i,
  input  logic [31:0] delta_i,
  input  logic [31:0] x_i,
  input  logic [31:0] y_i,
  input  logic [31:0] z_i,   // sum: the running sum (canonical)
  input  logic [31:0] w_i,
  output logic [31:0] y_o,
  output logic [31:0] z_o,
  output logic [31:0] w_o
);
  localparam logic [31:0] One = 32'h3F80_0000;

  logic [31:0] x, y, z, w, alpha_x, beta_y, velocity, nesterov, m, v, step;
  assign x = systole_arith::fp32_canonical(x_i);
  assign y = systole_arith::fp32_canonical(y_i);
  assign z = systole_arith::fp32_canonical(z_i);
  assign w = systole_arith::fp32_canonical(w_i);

  // A canonical value above zero (a NaN is not).
  function automatic logic positive(logic [31:0] value);
    positive = !value[31] && value[30:0] != '0 && !systole_arith::fp32_is_nan(value[30:0]);
  endfunction

  // The terms of the updates, in vector_ops.h's order of operations.
  assign alpha_x  = systole_arith::fp32_mul(alpha_i, x);
  assign beta_y   = systole_arith::fp32_mul(beta_i, y);
  // sgd: velocity, and Nesterov's look-ahead step.
  assign velocity = systole_arith::fp32_sub(beta_y, alpha_x);
  assign nesterov = systole_arith::fp32_sub(systole_arith::fp32_mul(beta_i, velocity), alpha_x);
  // adam: the moments (y, z) and the step on w.
  assign m = systole_arith::fp32_add(beta_y, systole_arith::fp32_mul(systole_arith::fp32_sub(One, beta_i), x));
  assign v = systole_arith::fp32_add(systole_arith::fp32_mul(gamma_i, z),
                                     systole_arith::fp32_mul(systole_arith::fp32_mul(
                                         systole_arith::fp32_sub(One, gamma_i), x), x));
  assign step = systole_arith::fp32_div(systole_arith::fp32_mul(alpha_i, m),
                                        systole_arith::fp32_add(systole_arith::fp32_sqrt(v), delta_i));

  always_comb begin
    y_o = y_i;
    z_o = z_i;
    w_o = w_i;
    unique case (opcode_i)
      // With beta +0, y is not read.
      8'(systole_pkg::OpcodeAxpby):    y_o = beta_i == '0 ? alpha_x : systole_arith::fp32_add(alpha_x, beta_y);
      8'(systole_pkg::OpcodeMul):      z_o = systole_arith::fp32_mul(x, y);
      8'(systole_pkg::OpcodeRelu):     z_o = positive(x) || systole_arith::fp32_is_nan(x[30:0]) ? x : '0;
      8'(systole_pkg::OpcodeReluGrad): z_o = positive(y) ? x : '0;
      8'(systole_pkg::OpcodeSum):      z_o = systole_arith::fp32_add(z, x);
      8'(systole_pkg::OpcodeSgd): begin
        y_o = velocity;
        z_o = systole_arith::fp32_add(z, nesterov_i ? nesterov : velocity);
      end
      8'(systole_pkg::OpcodeAdam): begin
        y_o = m;
        z_o = v;
        w_o = systole_arith::fp32_sub(w, step);
      end
      default: ;
    endcase
  end
endmodule
