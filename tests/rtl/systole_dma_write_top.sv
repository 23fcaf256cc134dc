// SPDX-License-Identifier: Apache-2.0
// systole_dma_write with its AXI4 port flat (m_axi_*), for dma_write_test.cpp.
`include "systole_axi.svh"

module systole_dma_write_top (
  input  logic                          clk_i,
  input  logic                          rst_ni,
  input  logic                          req_valid_i,
  output logic                          req_ready_o,
  input  logic [63:0]                   req_addr_i,
  input  logic [31:0]                   req_bytes_i,
  input  logic                          data_valid_i,
  output logic                          data_ready_o,
  input  logic [systole_pkg::AxiDataBits-1:0] data_i,
  output logic                          idle_o,
  output logic                          error_o,
  input  logic                          clear_error_i,
  `SYSTOLE_AXI_WRITE_PORTS(m_axi)
);
  systole_pkg::axi_req_t req;
  systole_pkg::axi_rsp_t rsp;
  `SYSTOLE_AXI_ASSIGN_WRITE(m_axi, req, rsp)
  assign rsp.ar_ready = 1'b0;
  assign rsp.r_valid  = 1'b0;
  assign rsp.r        = '0;

  systole_dma_write u_dma (
    .clk_i, .rst_ni, .req_valid_i, .req_ready_o, .req_addr_i, .req_bytes_i,
    .data_valid_i, .data_ready_o, .data_i, .idle_o, .error_o, .clear_error_i,
    .axi_req_o(req), .axi_rsp_i(rsp)
  );

  logic unused;
  assign unused = ^{req.ar, req.ar_valid, req.r_ready};
endmodule
