// SPDX-License-Identifier: Apache-2.0
// A small board's whole design but its clock and reset: the UART host link
// (systole_uart_rx/tx, systole_uart_bridge) in front of the compact kernel
// (systole_lite) and the device memory both reach, MemBytes of single-port
// RAM (on an iCE40 UltraPlus, yosys maps it to the SPRAM blocks). The
// kernel has the memory whenever it asks; the bridge waits meanwhile, so a
// host may read memory during a launch and gets its words after the
// kernel's access. The memory answers a read a cycle after taking it.
module systole_lite_top #(
  parameter int unsigned ClksPerBit  = 35,      // 4 MHz / 115200 baud
  parameter int unsigned Rows        = 2,
  parameter int unsigned Cols        = 1,
  parameter int unsigned MaxM        = 256,
  parameter int unsigned MemBytes    = 131072,  // the UP5K's four SPRAM blocks
  parameter int unsigned CounterBits = 40,
  localparam int unsigned MemWords   = MemBytes / 4,
  localparam int unsigned WordBits   = $clog2(MemWords)
) (
  input  logic clk_i,
  input  logic rst_ni,
  input  logic rx_i,
  output logic tx_o,
  output logic busy_o,      // a launch is running (ap_idle low)
  output logic interrupt_o
);
  logic                   rx_valid, tx_valid, tx_ready;
  logic [7:0]             rx_data, tx_data;
  systole_pkg::axil_req_t axil_req;
  systole_pkg::axil_rsp_t axil_rsp;

  systole_uart_rx #(.ClksPerBit(ClksPerBit)) u_rx (
    .clk_i, .rst_ni, .rx_i, .valid_o(rx_valid), .data_o(rx_data)
  );
  systole_uart_tx #(.ClksPerBit(ClksPerBit)) u_tx (
    .clk_i, .rst_ni, .valid_i(tx_valid), .data_i(tx_data), .ready_o(tx_ready), .tx_o
  );

  // The two memory masters.
  logic                b_valid, b_write, b_ready, b_rvalid;
  logic [WordBits-1:0] b_addr;
  logic [31:0]         b_wdata;
  logic                k_valid, k_write, k_rvalid;
  logic [WordBits-1:0] k_addr;
  logic [31:0]         k_wdata;
  logic [3:0]          k_wstrb;

  systole_uart_bridge #(.ClksPerBit(ClksPerBit), .MemWords(MemWords)) u_bridge (
    .clk_i, .rst_ni,
    .rx_valid_i(rx_valid), .rx_data_i(rx_data),
    .tx_valid_o(tx_valid), .tx_data_o(tx_data), .tx_ready_i(tx_ready),
    .axil_req_o(axil_req), .axil_rsp_i(axil_rsp),
    .mem_valid_o(b_valid), .mem_write_o(b_write), .mem_addr_o(b_addr), .mem_wdata_o(b_wdata),
    .mem_ready_i(b_ready), .mem_rvalid_i(b_rvalid), .mem_rdata_i(rdata_q)
  );

  systole_lite #(
    .Rows(Rows), .Cols(Cols), .MaxM(MaxM), .MemBytes(MemBytes), .CounterBits(CounterBits)
  ) u_kernel (
    .clk_i, .rst_ni,
    .axil_req_i(axil_req), .axil_rsp_o(axil_rsp), .interrupt_o, .busy_o,
    .mem_valid_o(k_valid), .mem_write_o(k_write), .mem_addr_o(k_addr), .mem_wdata_o(k_wdata),
    .mem_wstrb_o(k_wstrb), .mem_ready_i(1'b1), .mem_rvalid_i(k_rvalid), .mem_rdata_i(rdata_q)
  );

  // The memory: the kernel first.
  logic                valid, write;
  logic [WordBits-1:0] addr;
  logic [31:0]         wdata, rdata_q;
  logic [3:0]          wstrb;
  logic                read_q, kernel_read_q;
  assign b_ready = !k_valid;
  assign valid   = k_valid || b_valid;
  assign write   = k_valid ? k_write : b_write;
  assign addr    = k_valid ? k_addr : b_addr;
  assign wdata   = k_valid ? k_wdata : b_wdata;
  assign wstrb   = k_valid ? k_wstrb : 4'b1111;

  logic [31:0] mem_q [MemWords];
  always_ff @(posedge clk_i) begin
    if (valid && write) begin
      for (int b = 0; b < 4; b++)
        if (wstrb[b]) mem_q[addr][8*b +: 8] <= wdata[8*b +: 8];
    end else begin
      rdata_q <= mem_q[addr];
    end
  end
  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      read_q        <= 1'b0;
      kernel_read_q <= 1'b0;
    end else begin
      read_q        <= valid && !write;
      kernel_read_q <= k_valid;
    end
  end
  assign k_rvalid = read_q && kernel_read_q;
  assign b_rvalid = read_q && !kernel_read_q;
endmodule
