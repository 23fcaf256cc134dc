// SPDX-License-Identifier: Apache-2.0
// One lane of the vector engine: an elementwise opcode on one element
// (hw/spec/systole/vector_ops.h's vector_block and sum, in
// systole_arith's fp32 operations). The operands come as memory holds
// them and are canonicalised here; the scalars come canonical, with the
// descriptor's 1 - beta and 1 - gamma, which the engine computes once for
// every lane. An output the opcode does not write is its input unchanged.
// Combinational: the engine registers what it writes.
//
// The lane is Adam's dataflow (six products, four sums, a square root and
// a quotient), and every other opcode is routed through a part of it, so
// that no operation is built twice (yosys's SAT-based sharing cannot find
// this on a datapath this deep):
//   p1 = b1 y     b1: beta, or x for mul
//   p2 = a2 x     a2: alpha, or 1 - beta for adam
//   s1 = p1 + p2  adam: m; sgd: the velocity p1 - p2; axpby: p2 + p1
//   p3 = a3 b3    adam: gamma z; sgd: beta times the velocity
//   p4 = (1 - gamma) x,  p5 = p4 x
//   s2 = p3 + b4  adam: v = p3 + p5; sgd: the look-ahead p3 - p2
//   q  = alpha s1 / (sqrt(s2) + delta)
//   s4 = a4 + b5  adam: w - q; sgd: z + the velocity or the look-ahead;
//                 sum: z + x
// Each sum keeps vector_ops.h's operand order (a - b is a + -b, as
// systole_arith's fp32_sub).
module systole_vector_lane (
  input  logic [7:0]  opcode_i,
  input  logic        nesterov_i,
  input  logic [31:0] alpha_i,
  input  logic [31:0] beta_i,
  input  logic [31:0] gamma_i,
  input  logic [31:0] delta_i,
  input  logic [31:0] one_minus_beta_i,   // fp32_sub(1, beta)
  input  logic [31:0] one_minus_gamma_i,  // fp32_sub(1, gamma)
  input  logic [31:0] x_i,
  input  logic [31:0] y_i,
  input  logic [31:0] z_i,   // sum: the running sum (canonical)
  input  logic [31:0] w_i,
  output logic [31:0] y_o,
  output logic [31:0] z_o,
  output logic [31:0] w_o
);
  logic adam, sgd, axpby;
  logic [31:0] x, y, z, w;
  logic [31:0] p1, p2, p3, p4, p5, p6, s1, s2, s3, s4, q;
  logic [31:0] s1_a, s1_b, s2_b, s4_a, s4_b;
  assign adam  = opcode_i == 8'(systole_pkg::OpcodeAdam);
  assign sgd   = opcode_i == 8'(systole_pkg::OpcodeSgd);
  assign axpby = opcode_i == 8'(systole_pkg::OpcodeAxpby);
  assign x = systole_arith::fp32_canonical(x_i);
  assign y = systole_arith::fp32_canonical(y_i);
  assign z = systole_arith::fp32_canonical(z_i);
  assign w = systole_arith::fp32_canonical(w_i);

  // A canonical value above zero (a NaN is not).
  function automatic logic positive(logic [31:0] value);
    positive = !value[31] && value[30:0] != '0 && !systole_arith::fp32_is_nan(value[30:0]);
  endfunction
  function automatic logic [31:0] negate(logic [31:0] value);
    negate = {~value[31], value[30:0]};
  endfunction

  assign p1   = systole_arith::fp32_mul(opcode_i == 8'(systole_pkg::OpcodeMul) ? x : beta_i, y);
  assign p2   = systole_arith::fp32_mul(adam ? one_minus_beta_i : alpha_i, x);
  assign s1_a = axpby ? p2 : p1;
  assign s1_b = axpby ? p1 : sgd ? negate(p2) : p2;
  assign s1   = systole_arith::fp32_add(s1_a, s1_b);
  assign p3   = systole_arith::fp32_mul(adam ? gamma_i : beta_i, adam ? z : s1);
  assign p4   = systole_arith::fp32_mul(one_minus_gamma_i, x);
  assign p5   = systole_arith::fp32_mul(p4, x);
  assign s2_b = adam ? p5 : negate(p2);
  assign s2   = systole_arith::fp32_add(p3, s2_b);
  assign p6   = systole_arith::fp32_mul(alpha_i, s1);
  assign s3   = systole_arith::fp32_add(systole_arith::fp32_sqrt(s2), delta_i);
  assign q    = systole_arith::fp32_div(p6, s3);
  assign s4_a = adam ? w : z;
  assign s4_b = adam ? negate(q) : sgd ? (nesterov_i ? s2 : s1) : x;
  assign s4   = systole_arith::fp32_add(s4_a, s4_b);

  always_comb begin
    y_o = y_i;
    z_o = z_i;
    w_o = w_i;
    unique case (opcode_i)
      // With beta +0, y is not read.
      8'(systole_pkg::OpcodeAxpby):    y_o = beta_i == '0 ? p2 : s1;
      8'(systole_pkg::OpcodeMul):      z_o = p1;
      8'(systole_pkg::OpcodeRelu):     z_o = positive(x) || systole_arith::fp32_is_nan(x[30:0]) ? x : '0;
      8'(systole_pkg::OpcodeReluGrad): z_o = positive(y) ? x : '0;
      8'(systole_pkg::OpcodeSum):      z_o = s4;
      8'(systole_pkg::OpcodeSgd): begin
        y_o = s1;
        z_o = s4;
      end
      8'(systole_pkg::OpcodeAdam): begin
        y_o = s1;
        z_o = s2;
        w_o = s4;
      end
      default: ;
    endcase
  end
endmodule
