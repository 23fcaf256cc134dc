// SPDX-License-Identifier: Apache-2.0
// The kernel's AXI4-Lite slave: the register map of hw/spec (through the
// generated systole_pkg), with Vitis ap_ctrl_hs semantics so XRT's
// xrt::kernel can drive it:
//   CONTROL  bit 0 ap_start (set by the host, cleared when the kernel takes
//            it), bit 1 ap_done (clear on read), bit 2 ap_idle, bit 3
//            ap_ready (clear on read);
//   GIE / IER / ISR: interrupt enables and status (ISR bits toggle on a
//            written 1); interrupt_o = GIE & |(IER & ISR);
//   arguments (read/write, byte strobes), results (read-only, latched when
//   the kernel reports done), identification (read-only constants).
// Unmapped addresses read as 0 and ignore writes; every response is OKAY.
module systole_axil_regs #(
  parameter int unsigned Rows = 128,
  parameter int unsigned Cols = 128
) (
  input  logic        clk_i,
  input  logic        rst_ni,
  // AXI4-Lite slave.
  input  logic        awvalid_i,
  output logic        awready_o,
  input  logic [11:0] awaddr_i,
  input  logic        wvalid_i,
  output logic        wready_o,
  input  logic [31:0] wdata_i,
  input  logic [3:0]  wstrb_i,
  output logic        bvalid_o,
  input  logic        bready_i,
  output logic [1:0]  bresp_o,
  input  logic        arvalid_i,
  output logic        arready_o,
  input  logic [11:0] araddr_i,
  output logic        rvalid_o,
  input  logic        rready_i,
  output logic [31:0] rdata_o,
  output logic [1:0]  rresp_o,
  output logic        interrupt_o,
  // Kernel side.
  output logic        start_o,        // one cycle: begin a launch
  output logic [63:0] command_addr_o,
  output logic [63:0] a_base_o,
  output logic [63:0] b_base_o,
  output logic [63:0] c_base_o,
  output logic [63:0] mem_bytes_o,
  input  logic        done_i,         // one cycle: the launch has finished
  input  logic [31:0] status_i,
  input  logic [31:0] error_index_i,
  input  logic [31:0] descriptors_done_i,
  input  logic [63:0] busy_cycles_i,
  input  logic [63:0] macs_i,
  input  logic [63:0] dma_read_bytes_i,
  input  logic [63:0] dma_write_bytes_i,
  input  logic [63:0] stall_cycles_i
);
  // Argument registers, one 32-bit word each, indexed by offset / 4.
  localparam int unsigned FirstArg = systole_pkg::RegCommandAddrLo / 4;
  localparam int unsigned LastArg = systole_pkg::RegMemBytesHi / 4;
  logic [31:0] args_q [FirstArg:LastArg];
  // Results latched at done.
  logic [31:0] status_q, error_index_q, descriptors_done_q;
  logic [63:0] busy_cycles_q, macs_q, dma_read_bytes_q, dma_write_bytes_q, stall_cycles_q;
  // Control.
  logic start_q, busy_q, done_q, ready_q, gie_q;
  logic [1:0] ier_q, isr_q;

  // Write channel: take the address and the data in any order, then answer.
  logic        aw_held_q, w_held_q;
  logic [11:0] aw_addr_q;
  logic [31:0] w_data_q;
  logic [3:0]  w_strb_q;
  logic        do_write;
  logic [11:0] write_addr;
  logic [31:0] write_data;
  logic [3:0]  write_strb;

  assign awready_o  = !aw_held_q && !bvalid_o;
  assign wready_o   = !w_held_q && !bvalid_o;
  assign write_addr = aw_held_q ? aw_addr_q : awaddr_i;
  assign write_data = w_held_q ? w_data_q : wdata_i;
  assign write_strb = w_held_q ? w_strb_q : wstrb_i;
  assign do_write   = (aw_held_q || (awvalid_i && awready_o)) &&
                      (w_held_q || (wvalid_i && wready_o));
  assign bresp_o    = 2'b00;

  function automatic logic [31:0] merge(logic [31:0] old, logic [31:0] data, logic [3:0] strb);
    for (int b = 0; b < 4; b++) if (strb[b]) old[8*b +: 8] = data[8*b +: 8];
    merge = old;
  endfunction

  // Read channel: the data of the accepted address, one cycle later.
  logic [31:0] read_value;
  logic        do_read;
  assign arready_o = !rvalid_o;
  assign do_read   = arvalid_i && arready_o;
  assign rresp_o   = 2'b00;

  always_comb begin
    unique case (araddr_i)
      12'(systole_pkg::RegControl):
        read_value = {28'b0, ready_q, !busy_q && !start_q, done_q, start_q};
      12'(systole_pkg::RegGlobalIntEnable): read_value = {31'b0, gie_q};
      12'(systole_pkg::RegIpIntEnable): read_value = {30'b0, ier_q};
      12'(systole_pkg::RegIpIntStatus): read_value = {30'b0, isr_q};
      12'(systole_pkg::RegStatus): read_value = status_q;
      12'(systole_pkg::RegErrorIndex): read_value = error_index_q;
      12'(systole_pkg::RegDescriptorsDone): read_value = descriptors_done_q;
      12'(systole_pkg::RegBusyCyclesLo): read_value = busy_cycles_q[31:0];
      12'(systole_pkg::RegBusyCyclesHi): read_value = busy_cycles_q[63:32];
      12'(systole_pkg::RegMacsLo): read_value = macs_q[31:0];
      12'(systole_pkg::RegMacsHi): read_value = macs_q[63:32];
      12'(systole_pkg::RegDmaReadBytesLo): read_value = dma_read_bytes_q[31:0];
      12'(systole_pkg::RegDmaReadBytesHi): read_value = dma_read_bytes_q[63:32];
      12'(systole_pkg::RegDmaWriteBytesLo): read_value = dma_write_bytes_q[31:0];
      12'(systole_pkg::RegDmaWriteBytesHi): read_value = dma_write_bytes_q[63:32];
      12'(systole_pkg::RegStallCyclesLo): read_value = stall_cycles_q[31:0];
      12'(systole_pkg::RegStallCyclesHi): read_value = stall_cycles_q[63:32];
      12'(systole_pkg::RegId): read_value = systole_pkg::DeviceId;
      12'(systole_pkg::RegVersion): read_value = systole_pkg::Version;
      12'(systole_pkg::RegArrayRows): read_value = Rows;
      12'(systole_pkg::RegArrayCols): read_value = Cols;
      12'(systole_pkg::RegMaxM): read_value = systole_pkg::MaxM;
      12'(systole_pkg::RegMaxN): read_value = systole_pkg::MaxN;
      12'(systole_pkg::RegMaxK): read_value = systole_pkg::MaxKPerRow * Rows;
      12'(systole_pkg::RegBeatBytes): read_value = systole_pkg::BeatBytes;
      12'(systole_pkg::RegMaxDescriptors): read_value = systole_pkg::MaxDescriptors;
      default:
        read_value = (araddr_i[1:0] == '0 && araddr_i >= 12'(4 * FirstArg) &&
                      araddr_i <= 12'(4 * LastArg)) ? args_q[araddr_i[11:2]] : 32'b0;
    endcase
  end

  // Control state (synchronous reset).
  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      aw_held_q <= 1'b0;
      w_held_q  <= 1'b0;
      bvalid_o  <= 1'b0;
      rvalid_o  <= 1'b0;
      start_q   <= 1'b0;
      busy_q    <= 1'b0;
      done_q    <= 1'b0;
      ready_q   <= 1'b0;
      gie_q     <= 1'b0;
      ier_q     <= '0;
      isr_q     <= '0;
    end else begin
      // Write handshake.
      if (do_write) begin
        aw_held_q <= 1'b0;
        w_held_q  <= 1'b0;
        bvalid_o  <= 1'b1;
      end else begin
        if (awvalid_i && awready_o) aw_held_q <= 1'b1;
        if (wvalid_i && wready_o) w_held_q <= 1'b1;
      end
      if (bvalid_o && bready_i) bvalid_o <= 1'b0;
      // Read handshake; ap_done and ap_ready clear when CONTROL is read.
      if (do_read) begin
        rvalid_o <= 1'b1;
        if (araddr_i == 12'(systole_pkg::RegControl)) begin
          done_q  <= 1'b0;
          ready_q <= 1'b0;
        end
      end
      if (rvalid_o && rready_i) rvalid_o <= 1'b0;
      // The kernel takes ap_start at once when idle.
      if (start_q) begin
        start_q <= 1'b0;
        busy_q  <= 1'b1;
      end
      if (done_i) begin
        busy_q  <= 1'b0;
        done_q  <= 1'b1;
        ready_q <= 1'b1;
        isr_q   <= isr_q | ier_q;
      end
      // Register writes.
      if (do_write) begin
        unique case (write_addr)
          12'(systole_pkg::RegControl):
            if (write_strb[0] && write_data[0] && !busy_q) start_q <= 1'b1;
          12'(systole_pkg::RegGlobalIntEnable): if (write_strb[0]) gie_q <= write_data[0];
          12'(systole_pkg::RegIpIntEnable): if (write_strb[0]) ier_q <= write_data[1:0];
          12'(systole_pkg::RegIpIntStatus): if (write_strb[0]) isr_q <= isr_q ^ write_data[1:0];
          default: ;
        endcase
      end
    end
  end

  // Data registers (no reset).
  always_ff @(posedge clk_i) begin
    if (do_read) rdata_o <= read_value;
    if (!aw_held_q && awvalid_i && awready_o && !do_write) aw_addr_q <= awaddr_i;
    if (!w_held_q && wvalid_i && wready_o && !do_write) begin
      w_data_q <= wdata_i;
      w_strb_q <= wstrb_i;
    end
    if (do_write && write_addr[1:0] == '0 && write_addr >= 12'(4 * FirstArg) &&
        write_addr <= 12'(4 * LastArg) && !busy_q && !start_q)
      args_q[write_addr[11:2]] <= merge(args_q[write_addr[11:2]], write_data, write_strb);
    if (done_i) begin
      status_q           <= status_i;
      error_index_q      <= error_index_i;
      descriptors_done_q <= descriptors_done_i;
      busy_cycles_q      <= busy_cycles_i;
      macs_q             <= macs_i;
      dma_read_bytes_q   <= dma_read_bytes_i;
      dma_write_bytes_q  <= dma_write_bytes_i;
      stall_cycles_q     <= stall_cycles_i;
    end
  end

  assign start_o        = start_q;
  assign command_addr_o = {args_q[systole_pkg::RegCommandAddrHi / 4], args_q[systole_pkg::RegCommandAddrLo / 4]};
  assign a_base_o       = {args_q[systole_pkg::RegABaseHi / 4], args_q[systole_pkg::RegABaseLo / 4]};
  assign b_base_o       = {args_q[systole_pkg::RegBBaseHi / 4], args_q[systole_pkg::RegBBaseLo / 4]};
  assign c_base_o       = {args_q[systole_pkg::RegCBaseHi / 4], args_q[systole_pkg::RegCBaseLo / 4]};
  assign mem_bytes_o    = {args_q[systole_pkg::RegMemBytesHi / 4], args_q[systole_pkg::RegMemBytesLo / 4]};
  assign interrupt_o    = gie_q && (ier_q & isr_q) != '0;
endmodule
