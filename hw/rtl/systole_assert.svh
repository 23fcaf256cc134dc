// SPDX-License-Identifier: Apache-2.0
// Assertion macros, after lowRISC ibex's prim_assert: one place says how an
// assertion is written, reports its failure, and keeps it from synthesis.
//
//   `ASSERT(name, prop)                   prop at every rising clk_i edge,
//                                         except in reset (rst_ni low)
//   `ASSERT_DISABLE(name, prop, disable)  the same, except while `disable`
//   `ASSERT_NORESET(name, prop)           prop at every rising clk_i edge
//   `ASSERT_INIT(name, prop)              prop once, at time 0 (parameters,
//                                         widths)
//
// The module's clock is clk_i and its reset rst_ni. A failure names the
// assertion and the instance. Yosys and Vivado define SYNTHESIS.
`ifndef SYSTOLE_ASSERT_SVH
`define SYSTOLE_ASSERT_SVH

`ifdef SYNTHESIS
`define ASSERT(__name, __prop)
`define ASSERT_DISABLE(__name, __prop, __disable)
`define ASSERT_NORESET(__name, __prop)
`define ASSERT_INIT(__name, __prop)
`else
`define ASSERT_DISABLE(__name, __prop, __disable)                   \
  __name: assert property (@(posedge clk_i) disable iff (__disable) \
      __prop) else $error("%m: %s failed", `"__name`");
`define ASSERT(__name, __prop) `ASSERT_DISABLE(__name, __prop, !rst_ni)
`define ASSERT_NORESET(__name, __prop)                          \
  __name: assert property (@(posedge clk_i) __prop) else        \
      $error("%m: %s failed", `"__name`");
`define ASSERT_INIT(__name, __prop)                             \
  initial begin : __name                                        \
    assert (__prop) else $fatal(1, "%m: %s failed", `"__name`"); \
  end
`endif

`endif  // SYSTOLE_ASSERT_SVH
