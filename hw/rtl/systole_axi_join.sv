// SPDX-License-Identifier: Apache-2.0
// One port from a reader's read channels and a writer's write channels
// (the kernel's c ports). A module for the reason systole_axi_beats is.
module systole_axi_join (
  /* verilator lint_off UNUSEDSIGNAL */  // each side's own channels only
  input  systole_pkg::axi_req_t read_req_i,
  input  systole_pkg::axi_req_t write_req_i,
  /* verilator lint_on UNUSEDSIGNAL */
  output systole_pkg::axi_req_t req_o
);
  always_comb begin
    req_o          = write_req_i;
    req_o.ar       = read_req_i.ar;
    req_o.ar_valid = read_req_i.ar_valid;
    req_o.r_ready  = read_req_i.r_ready;
  end
endmodule
