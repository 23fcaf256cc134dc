// SPDX-License-Identifier: Apache-2.0
// Where an engine of the kernel's controller is in a descriptor's work:
// N tile j, K tile t and the step i inside that K tile (a weight row, or
// an activation row), in the order the array consumes them: i fastest,
// then t, then j. g = j * k_tiles + t counts K tiles over all N tiles
// (its parity names the weight bank). One step per step_i; clear_i starts
// over at the descriptor's first step.
module systole_tile_counter (
  input  logic        clk_i,
  input  logic        clear_i,
  input  logic        step_i,
  input  logic [31:0] steps_i,    // steps per K tile (>= 1)
  input  logic [31:0] k_tiles_i,  // K tiles per N tile (>= 1)
  output logic [31:0] j_o,
  output logic [31:0] t_o,
  output logic [31:0] i_o,
  output logic [31:0] g_o
);
  always_ff @(posedge clk_i) begin
    if (clear_i) begin
      {j_o, t_o, i_o, g_o} <= '0;
    end else if (step_i) begin
      i_o <= i_o + 32'd1;
      if (i_o + 32'd1 == steps_i) begin
        i_o <= '0;
        t_o <= t_o + 32'd1;
        g_o <= g_o + 32'd1;
        if (t_o + 32'd1 == k_tiles_i) begin
          t_o <= '0;
          j_o <= j_o + 32'd1;
        end
      end
    end
  end
endmodule
