// SPDX-License-Identifier: Apache-2.0
// systole_axil_regs with its AXI4-Lite port flat (s_axi_*), for
// axil_test.cpp; the kernel side as the module has it.
`include "systole_axi.svh"

module systole_axil_regs_top #(
  parameter int unsigned Rows = 8,
  parameter int unsigned Cols = 8
) (
  input  logic        clk_i,
  input  logic        rst_ni,
  `SYSTOLE_AXIL_PORTS(s_axi),
  output logic        interrupt_o,
  output logic        start_o,
  output logic [systole_pkg::MemoryPorts*64-1:0] port_base_o,
  output logic [63:0] mem_bytes_o,
  input  logic        done_i,
  input  logic [31:0] status_i,
  input  logic [31:0] error_index_i,
  input  logic [31:0] descriptors_done_i,
  input  logic [63:0] busy_cycles_i,
  input  logic [63:0] macs_i,
  input  logic [63:0] dma_read_bytes_i,
  input  logic [63:0] dma_write_bytes_i,
  input  logic [63:0] stall_cycles_i
);
  systole_pkg::axil_req_t req;
  systole_pkg::axil_rsp_t rsp;
  `SYSTOLE_AXIL_ASSIGN(s_axi, req, rsp)

  systole_axil_regs #(.Rows(Rows), .Cols(Cols), .Features(systole_pkg::FeatureVectorEngine)) u_regs (
    .clk_i, .rst_ni, .axil_req_i(req), .axil_rsp_o(rsp), .interrupt_o,
    .start_o, .port_base_o, .mem_bytes_o,
    .done_i, .status_i, .error_index_i, .descriptors_done_i, .busy_cycles_i, .macs_i,
    .dma_read_bytes_i, .dma_write_bytes_i, .stall_cycles_i
  );
endmodule
