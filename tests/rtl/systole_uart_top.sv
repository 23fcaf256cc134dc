// SPDX-License-Identifier: Apache-2.0
// The UART host link around the kernel's register file, for
// uart_bridge_test.cpp: line in (rx_i), line out (tx_o), the bridge on
// systole_axil_regs (its kernel side idle) and on a memory of MemWords
// words that answers a read a cycle after taking it. The test reaches the
// memory directly too (mem_q, public).
module systole_uart_top #(
  parameter int unsigned ClksPerBit = 4,
  parameter int unsigned MemWords   = 1024
) (
  input  logic clk_i,
  input  logic rst_ni,
  input  logic rx_i,
  output logic tx_o
);
  localparam int unsigned MemBits = $clog2(MemWords);

  logic                   rx_valid, tx_valid, tx_ready;
  logic [7:0]             rx_data, tx_data;
  systole_pkg::axil_req_t axil_req;
  systole_pkg::axil_rsp_t axil_rsp;
  logic                   mem_valid, mem_write, mem_rvalid_q;
  logic [MemBits-1:0]     mem_addr;
  logic [31:0]            mem_wdata, mem_rdata_q;
  logic [31:0]            mem_q [MemWords] /*verilator public*/;

  systole_uart_rx #(.ClksPerBit(ClksPerBit)) u_rx (
    .clk_i, .rst_ni, .rx_i, .valid_o(rx_valid), .data_o(rx_data)
  );
  systole_uart_tx #(.ClksPerBit(ClksPerBit)) u_tx (
    .clk_i, .rst_ni, .valid_i(tx_valid), .data_i(tx_data), .ready_o(tx_ready), .tx_o
  );
  systole_uart_bridge #(.ClksPerBit(ClksPerBit), .MemWords(MemWords)) u_bridge (
    .clk_i, .rst_ni,
    .rx_valid_i(rx_valid), .rx_data_i(rx_data),
    .tx_valid_o(tx_valid), .tx_data_o(tx_data), .tx_ready_i(tx_ready),
    .axil_req_o(axil_req), .axil_rsp_i(axil_rsp),
    .mem_valid_o(mem_valid), .mem_write_o(mem_write), .mem_addr_o(mem_addr), .mem_wdata_o(mem_wdata),
    .mem_ready_i(1'b1), .mem_rvalid_i(mem_rvalid_q), .mem_rdata_i(mem_rdata_q)
  );

  logic                                  interrupt, start;
  logic [systole_pkg::MemoryPorts*64-1:0] port_base;
  logic [63:0]                           mem_bytes;
  systole_axil_regs #(.Rows(2), .Cols(1)) u_regs (
    .clk_i, .rst_ni, .axil_req_i(axil_req), .axil_rsp_o(axil_rsp), .interrupt_o(interrupt),
    .start_o(start), .port_base_o(port_base), .mem_bytes_o(mem_bytes),
    .done_i(1'b0), .status_i('0), .error_index_i('0), .descriptors_done_i('0), .busy_cycles_i('0),
    .macs_i('0), .dma_read_bytes_i('0), .dma_write_bytes_i('0), .stall_cycles_i('0)
  );

  always_ff @(posedge clk_i) begin
    if (mem_valid && mem_write) mem_q[mem_addr] <= mem_wdata;
    mem_rdata_q  <= mem_q[mem_addr];
    mem_rvalid_q <= rst_ni && mem_valid && !mem_write;
  end

  logic unused;
  assign unused = ^{interrupt, start, port_base, mem_bytes};
endmodule
