// SPDX-License-Identifier: Apache-2.0
// systole_dma_read with its AXI4 port flat (m_axi_*), for dma_read_test.cpp.
`include "systole_axi.svh"

module systole_dma_read_top (
  input  logic                          clk_i,
  input  logic                          rst_ni,
  input  logic                          req_valid_i,
  output logic                          req_ready_o,
  input  logic [63:0]                   req_addr_i,
  input  logic [31:0]                   req_bytes_i,
  output logic                          beat_valid_o,
  input  logic                          beat_ready_i,
  output logic [systole_pkg::AxiDataBits-1:0] beat_o,
  output logic                          beat_last_o,
  output logic                          error_o,
  input  logic                          clear_error_i,
  `SYSTOLE_AXI_READ_PORTS(m_axi)
);
  systole_pkg::axi_req_t req;
  systole_pkg::axi_rsp_t rsp;
  `SYSTOLE_AXI_ASSIGN_READ_ONLY(m_axi, req, rsp)

  systole_dma_read u_dma (
    .clk_i, .rst_ni, .req_valid_i, .req_ready_o, .req_addr_i, .req_bytes_i,
    .beat_valid_o, .beat_ready_i, .beat_o, .beat_last_o, .error_o, .clear_error_i,
    .axi_req_o(req), .axi_rsp_i(rsp)
  );
endmodule
