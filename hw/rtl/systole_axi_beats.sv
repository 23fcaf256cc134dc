// SPDX-License-Identifier: Apache-2.0
// Whether a beat moves on a port this cycle: on R, or with Write on W. A
// module so that loops over ports (systole_striped_reader/_writer) never
// reach into a struct's fields, which yosys does not resolve there.
module systole_axi_beats #(
  parameter bit Write = 1'b0
) (
  /* verilator lint_off UNUSEDSIGNAL */  // the handshake bits only
  input  systole_pkg::axi_req_t req_i,
  input  systole_pkg::axi_rsp_t rsp_i,
  /* verilator lint_on UNUSEDSIGNAL */
  output logic                  beat_o
);
  assign beat_o = Write ? req_i.w_valid && rsp_i.w_ready : rsp_i.r_valid && req_i.r_ready;
endmodule
