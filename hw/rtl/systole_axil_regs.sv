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
`include "systole_assert.svh"

module systole_axil_regs #(
  parameter int unsigned Rows = 128,
  parameter int unsigned Cols = 128,
  parameter int unsigned Features = 0  // the FEATURES register (systole_pkg::Feature*)
) (
  input  logic                       clk_i,
  input  logic                       rst_ni,
  input  systole_pkg::axil_req_t axil_req_i,
  output systole_pkg::axil_rsp_t axil_rsp_o,
  output logic                       interrupt_o,
  // Kernel side.
  output logic        start_o,        // one cycle: begin a launch
  // Port p's base-address argument at [64 p +: 64]; port 0's is the
  // command list's address.
  output logic [systole_pkg::MemoryPorts*64-1:0] port_base_o,
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

  // Control state.
  typedef struct packed {
    logic       aw_held;  // an address taken, awaiting its data
    logic       w_held;   // data taken, awaiting its address
    logic       b_valid;
    logic       r_valid;
    logic       start;    // ap_start
    logic       busy;
    logic       done;     // ap_done
    logic       ready;    // ap_ready
    logic       gie;
    logic [1:0] ier;
    logic [1:0] isr;
  } ctrl_t;
  ctrl_t ctrl_d, ctrl_q;

  // Write channel: take the address and the data in any order, then answer.
  logic                        aw_take, w_take, do_write, do_read, writable;
  systole_pkg::axil_addr_t aw_addr_q, write_addr;
  systole_pkg::axil_data_t w_data_q, write_data, read_value, r_data_q;
  logic [3:0]                  w_strb_q, write_strb;

  assign aw_take    = axil_req_i.aw_valid && axil_rsp_o.aw_ready;
  assign w_take     = axil_req_i.w_valid && axil_rsp_o.w_ready;
  assign write_addr = ctrl_q.aw_held ? aw_addr_q : axil_req_i.aw_addr;
  assign write_data = ctrl_q.w_held ? w_data_q : axil_req_i.w_data;
  assign write_strb = ctrl_q.w_held ? w_strb_q : axil_req_i.w_strb;
  assign do_write   = (ctrl_q.aw_held || aw_take) && (ctrl_q.w_held || w_take);
  assign do_read    = axil_req_i.ar_valid && axil_rsp_o.ar_ready;
  assign writable   = write_addr[1:0] == '0 && write_addr >= 12'(4 * FirstArg) &&
                      write_addr <= 12'(4 * LastArg) && !ctrl_q.busy && !ctrl_q.start;

  always_comb begin
    axil_rsp_o          = '0;  // every response OKAY
    axil_rsp_o.aw_ready = !ctrl_q.aw_held && !ctrl_q.b_valid;
    axil_rsp_o.w_ready  = !ctrl_q.w_held && !ctrl_q.b_valid;
    axil_rsp_o.b_valid  = ctrl_q.b_valid;
    axil_rsp_o.ar_ready = !ctrl_q.r_valid;  // the data of an address, one cycle later
    axil_rsp_o.r_valid  = ctrl_q.r_valid;
    axil_rsp_o.r_data   = r_data_q;
  end

  function automatic logic [31:0] merge(logic [31:0] old, logic [31:0] data, logic [3:0] strb);
    for (int b = 0; b < 4; b++) if (strb[b]) old[8*b +: 8] = data[8*b +: 8];
    merge = old;
  endfunction

  always_comb begin
    unique case (axil_req_i.ar_addr)
      12'(systole_pkg::RegControl):
        read_value = {28'b0, ctrl_q.ready, !ctrl_q.busy && !ctrl_q.start, ctrl_q.done, ctrl_q.start};
      12'(systole_pkg::RegGlobalIntEnable): read_value = {31'b0, ctrl_q.gie};
      12'(systole_pkg::RegIpIntEnable): read_value = {30'b0, ctrl_q.ier};
      12'(systole_pkg::RegIpIntStatus): read_value = {30'b0, ctrl_q.isr};
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
      // No vector engine yet: its opcodes end a launch with ErrBadOpcode.
      12'(systole_pkg::RegFeatures): read_value = 32'(Features);
      default:
        read_value = (axil_req_i.ar_addr[1:0] == '0 && axil_req_i.ar_addr >= 12'(4 * FirstArg) &&
                      axil_req_i.ar_addr <= 12'(4 * LastArg)) ? args_q[axil_req_i.ar_addr[11:2]] : 32'b0;
    endcase
  end

  always_comb begin
    ctrl_d = ctrl_q;
    // Write handshake.
    if (do_write) begin
      ctrl_d.aw_held = 1'b0;
      ctrl_d.w_held  = 1'b0;
      ctrl_d.b_valid = 1'b1;
    end else begin
      if (aw_take) ctrl_d.aw_held = 1'b1;
      if (w_take) ctrl_d.w_held = 1'b1;
    end
    if (ctrl_q.b_valid && axil_req_i.b_ready) ctrl_d.b_valid = 1'b0;
    // Read handshake; ap_done and ap_ready clear when CONTROL is read.
    if (do_read) begin
      ctrl_d.r_valid = 1'b1;
      if (axil_req_i.ar_addr == 12'(systole_pkg::RegControl)) begin
        ctrl_d.done  = 1'b0;
        ctrl_d.ready = 1'b0;
      end
    end
    if (ctrl_q.r_valid && axil_req_i.r_ready) ctrl_d.r_valid = 1'b0;
    // The kernel takes ap_start at once when idle.
    if (ctrl_q.start) begin
      ctrl_d.start = 1'b0;
      ctrl_d.busy  = 1'b1;
    end
    if (done_i) begin
      ctrl_d.busy  = 1'b0;
      ctrl_d.done  = 1'b1;
      ctrl_d.ready = 1'b1;
      ctrl_d.isr   = ctrl_q.isr | ctrl_q.ier;
    end
    // Register writes.
    if (do_write) begin
      unique case (write_addr)
        12'(systole_pkg::RegControl):
          if (write_strb[0] && write_data[0] && !ctrl_q.busy) ctrl_d.start = 1'b1;
        12'(systole_pkg::RegGlobalIntEnable): if (write_strb[0]) ctrl_d.gie = write_data[0];
        12'(systole_pkg::RegIpIntEnable): if (write_strb[0]) ctrl_d.ier = write_data[1:0];
        12'(systole_pkg::RegIpIntStatus): if (write_strb[0]) ctrl_d.isr = ctrl_q.isr ^ write_data[1:0];
        default: ;
      endcase
    end
  end

  always_ff @(posedge clk_i) begin
    if (!rst_ni) ctrl_q <= '0;
    else ctrl_q <= ctrl_d;
  end

  // Data registers: no reset (the host writes the arguments before a
  // start; results are read after a done).
  always_ff @(posedge clk_i) begin
    if (do_read) r_data_q <= read_value;
    if (!ctrl_q.aw_held && aw_take && !do_write) aw_addr_q <= axil_req_i.aw_addr;
    if (!ctrl_q.w_held && w_take && !do_write) begin
      w_data_q <= axil_req_i.w_data;
      w_strb_q <= axil_req_i.w_strb;
    end
    if (do_write && writable) args_q[write_addr[11:2]] <= merge(args_q[write_addr[11:2]], write_data, write_strb);
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

  assign start_o        = ctrl_q.start;
  for (genvar p = 0; p < systole_pkg::MemoryPorts; p++) begin : g_port_base
    localparam int unsigned Lo = systole_pkg::RegPortBaseLo / 4 + 2 * p;
    assign port_base_o[64*p +: 64] = {args_q[Lo + 1], args_q[Lo]};
  end
  assign mem_bytes_o    = {args_q[systole_pkg::RegMemBytesHi / 4], args_q[systole_pkg::RegMemBytesLo / 4]};
  assign interrupt_o    = ctrl_q.gie && (ctrl_q.ier & ctrl_q.isr) != '0;

  // A response held until it is taken does not change.
  `ASSERT(a_read_stable,
      axil_rsp_o.r_valid && !axil_req_i.r_ready |=> axil_rsp_o.r_valid && $stable(axil_rsp_o.r_data))
endmodule
