// SPDX-License-Identifier: Apache-2.0
// One lane of the output stage (NUMERICS.md, after the K tiles): optional
// bias add, optional ReLU (NaN stays NaN; -0 and negatives become +0), then
// fp32 or bf16 (in the low half) as the word to store.
module systole_output_stage (
  input  logic        bias_en_i,
  input  logic        relu_en_i,
  input  logic        bf16_en_i,
  input  logic [31:0] accumulator_i,  // canonical fp32
  input  logic [31:0] bias_i,         // fp32 as read from memory
  output logic [31:0] word_o
);
  logic [31:0] activated;
  logic        is_nan;

  always_comb begin
    activated = bias_en_i ? systole_arith::fp32_add(accumulator_i, systole_arith::fp32_canonical(bias_i))
                          : accumulator_i;
    is_nan = activated[30:23] == 8'hFF && activated[22:0] != '0;
    // Positive: sign clear and not a zero (the accumulator holds no subnormals).
    if (relu_en_i && !is_nan && (activated[31] || activated[30:0] == '0)) activated = '0;
  end

  assign word_o = bf16_en_i ? {16'b0, systole_arith::fp32_to_bf16(activated)} : activated;
endmodule
