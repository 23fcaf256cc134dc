// SPDX-License-Identifier: Apache-2.0
// A simulation check of a valid/ready handshake: once offered and not
// taken, a payload stays the same (and, with ValidHeld, stays offered)
// until it is taken (AXI A3.2.1). Instantiated under `ifndef SYNTHESIS`.
// The copy and the comparison are registers (5.006, Debian's Verilator,
// cannot sample wide signals in an assertion), so a violation is reported
// one cycle late.
`include "systole_assert.svh"

module systole_hold_check #(
  parameter int unsigned Width = 1,
  parameter bit          ValidHeld = 1'b1
) (
  input logic             clk_i,
  input logic             rst_ni,
  input logic             valid_i,
  input logic             ready_i,
  input logic [Width-1:0] payload_i
);
`ifndef SYNTHESIS
  logic [Width-1:0] past_q;
  logic             waiting_q, kept_q;
  always_ff @(posedge clk_i) begin
    past_q    <= payload_i;
    waiting_q <= valid_i && !ready_i;
    kept_q    <= !rst_ni || !waiting_q || (valid_i ? payload_i == past_q : !ValidHeld);
  end
  `ASSERT(a_held, kept_q)
`endif
endmodule
