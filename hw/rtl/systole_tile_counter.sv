// SPDX-License-Identifier: Apache-2.0
// Where an engine of the kernel's controller is in a descriptor's work:
// N tile j, K tile t and the step i inside that K tile (a weight row, or
// an activation row), in the order the array consumes them: i fastest,
// then t, then j. g = j * k_tiles + t counts K tiles over all N tiles
// (its parity names the weight bank). One step per step_i; clear_i starts
// over at the descriptor's first step.
`include "systole_assert.svh"

module systole_tile_counter (
  input  logic        clk_i,
  input  logic        rst_ni,
  input  logic        clear_i,
  input  logic        step_i,
  input  logic [31:0] steps_i,    // steps per K tile (>= 1)
  input  logic [31:0] k_tiles_i,  // K tiles per N tile (>= 1)
  output logic [31:0] j_o,
  output logic [31:0] t_o,
  output logic [31:0] i_o,
  output logic [31:0] g_o
);
  logic [31:0] j_d, j_q, t_d, t_q, i_d, i_q, g_d, g_q;

  always_comb begin
    {j_d, t_d, i_d, g_d} = {j_q, t_q, i_q, g_q};
    if (clear_i) begin
      {j_d, t_d, i_d, g_d} = '0;
    end else if (step_i) begin
      i_d = i_q + 32'd1;
      if (i_q + 32'd1 == steps_i) begin
        i_d = '0;
        t_d = t_q + 32'd1;
        g_d = g_q + 32'd1;
        if (t_q + 32'd1 == k_tiles_i) begin
          t_d = '0;
          j_d = j_q + 32'd1;
        end
      end
    end
  end

  always_ff @(posedge clk_i) begin
    if (!rst_ni) {j_q, t_q, i_q, g_q} <= '0;
    else {j_q, t_q, i_q, g_q} <= {j_d, t_d, i_d, g_d};
  end

  assign {j_o, t_o, i_o, g_o} = {j_q, t_q, i_q, g_q};

  `ASSERT_DISABLE(a_step_in_tile, step_i |-> i_q < steps_i && t_q < k_tiles_i, !rst_ni || clear_i)
endmodule
