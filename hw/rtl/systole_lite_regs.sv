// SPDX-License-Identifier: Apache-2.0
// The compact kernel's AXI4-Lite register file: the register map of
// docs/kernel-interface.md with what the compact kernel differs in (its
// identification values, beat_bytes 4, no vector engine in the features,
// port bases fixed at 0, mem_bytes and the list's address inside its
// memory, 64-bit registers whose high words are 0; a write of anything
// else gets SLVERR). The launch's results and counters come from the
// controller and read only. Smaller than systole_axil_regs, which the
// Alveo kernel's wider addresses and counters need and which the iCE40
// build has no room for.
module systole_lite_regs #(
  parameter int unsigned Rows        = 2,
  parameter int unsigned Cols        = 1,
  parameter int unsigned MaxM        = 256,
  parameter int unsigned MaxN        = 1,
  parameter int unsigned MaxK        = 1,
  parameter int unsigned MaxDesc     = 1,
  parameter int unsigned MemBytes    = 131072,  // a power of two
  parameter int unsigned CounterBits = 32,
  localparam int unsigned AddrBits   = $clog2(MemBytes) + 1,
  localparam int unsigned DescBits   = $clog2(MaxDesc + 1)
) (
  input  logic                   clk_i,
  input  logic                   rst_ni,
  input  systole_pkg::axil_req_t axil_req_i,
  output systole_pkg::axil_rsp_t axil_rsp_o,
  output logic                   interrupt_o,
  // The controller: it takes start_o when idle (busy_i low), and finish_i
  // ends the launch.
  input  logic                   busy_i,
  input  logic                   finish_i,
  output logic                   start_o,
  output logic [AddrBits-1:0]    cmd_o,        // the list's address
  output logic [AddrBits-1:0]    mem_bytes_o,
  // The launch's results and counters.
  input  logic [3:0]             status_i,
  input  logic                   header_error_i,
  input  logic [DescBits-1:0]    error_index_i,
  input  logic [DescBits-1:0]    done_count_i,
  input  logic [CounterBits-1:0] busy_cycles_i,
  input  logic [CounterBits-1:0] macs_i,
  input  logic [CounterBits-1:0] read_bytes_i,
  input  logic [CounterBits-1:0] write_bytes_i,
  input  logic [CounterBits-1:0] stall_cycles_i
);
  localparam int unsigned MemLg = $clog2(MemBytes);
  logic                start_q, done_q, ready_q, gie_q;
  logic [1:0]          ier_q, isr_q;
  logic [AddrBits-1:0] cmd_q, mem_bytes_q;

  // A write: both channels together, answered the next cycle. A read: its
  // address is kept, and the register answers the next cycle.
  logic        b_valid_q, b_err_q, r_valid_q, wr, rd, wr_err, rd_err;
  logic [31:0] rd_data;
  logic [11:0] wa, ra, r_addr_q;
  logic [31:0] wd;
  assign wr = axil_req_i.aw_valid && axil_req_i.w_valid && !b_valid_q;
  assign rd = axil_req_i.ar_valid && !r_valid_q;
  assign wa = {axil_req_i.aw_addr[11:2], 2'b00};
  assign ra = {axil_req_i.ar_addr[11:2], 2'b00};
  assign wd = axil_req_i.w_data;

  always_comb begin
    axil_rsp_o          = '0;
    axil_rsp_o.aw_ready = wr;
    axil_rsp_o.w_ready  = wr;
    axil_rsp_o.b_valid  = b_valid_q;
    axil_rsp_o.b_resp   = {b_err_q, 1'b0};
    axil_rsp_o.ar_ready = rd;
    axil_rsp_o.r_valid  = r_valid_q;
    axil_rsp_o.r_data   = rd_data;
    axil_rsp_o.r_resp   = {rd_err, 1'b0};
  end

  // What a write may set: an address register's high word only to 0, a
  // port base only to 0, mem_bytes and the list's address only inside
  // the memory; the read-only registers refuse writes.
  always_comb begin
    wr_err = 1'b0;
    if (wa == 12'(systole_pkg::RegCommandAddrLo))
      wr_err = wd[31:MemLg] != '0;
    else if (wa == 12'(systole_pkg::RegMemBytesLo))
      wr_err = wd[31:MemLg] != '0 && wd != 32'(MemBytes);
    else if (wa >= 12'(systole_pkg::RegPortBaseLo) && wa < 12'(systole_pkg::RegMemBytesHi + 4))
      wr_err = wd != '0;
    else if (wa > 12'(systole_pkg::RegIpIntStatus))
      wr_err = 1'b1;
  end

  function automatic logic [31:0] counter_word(logic [CounterBits-1:0] value, logic high);
    logic [63:0] wide;
    wide = 64'(value);
    counter_word = high ? wide[63:32] : wide[31:0];
  endfunction

  always_comb begin
    rd_data = '0;
    rd_err  = 1'b0;
    unique case (r_addr_q)
      12'(systole_pkg::RegControl):         rd_data = {28'b0, ready_q, !busy_i, done_q, start_q};
      12'(systole_pkg::RegGlobalIntEnable): rd_data = {31'b0, gie_q};
      12'(systole_pkg::RegIpIntEnable):     rd_data = {30'b0, ier_q};
      12'(systole_pkg::RegIpIntStatus):     rd_data = {30'b0, isr_q};
      12'(systole_pkg::RegCommandAddrLo):   rd_data = 32'(cmd_q);
      12'(systole_pkg::RegMemBytesLo):      rd_data = 32'(mem_bytes_q);
      12'(systole_pkg::RegStatus):          rd_data = 32'(status_i);
      12'(systole_pkg::RegErrorIndex):      rd_data = header_error_i ? 32'(systole_pkg::HeaderErrorIndex) : 32'(error_index_i);
      12'(systole_pkg::RegDescriptorsDone): rd_data = 32'(done_count_i);
      12'(systole_pkg::RegBusyCyclesLo):    rd_data = counter_word(busy_cycles_i, 1'b0);
      12'(systole_pkg::RegBusyCyclesHi):    rd_data = counter_word(busy_cycles_i, 1'b1);
      12'(systole_pkg::RegMacsLo):          rd_data = counter_word(macs_i, 1'b0);
      12'(systole_pkg::RegMacsHi):          rd_data = counter_word(macs_i, 1'b1);
      12'(systole_pkg::RegDmaReadBytesLo):  rd_data = counter_word(read_bytes_i, 1'b0);
      12'(systole_pkg::RegDmaReadBytesHi):  rd_data = counter_word(read_bytes_i, 1'b1);
      12'(systole_pkg::RegDmaWriteBytesLo): rd_data = counter_word(write_bytes_i, 1'b0);
      12'(systole_pkg::RegDmaWriteBytesHi): rd_data = counter_word(write_bytes_i, 1'b1);
      12'(systole_pkg::RegStallCyclesLo):   rd_data = counter_word(stall_cycles_i, 1'b0);
      12'(systole_pkg::RegStallCyclesHi):   rd_data = counter_word(stall_cycles_i, 1'b1);
      12'(systole_pkg::RegId):              rd_data = systole_pkg::DeviceId;
      12'(systole_pkg::RegVersion):         rd_data = systole_pkg::Version;
      12'(systole_pkg::RegArrayRows):       rd_data = Rows;
      12'(systole_pkg::RegArrayCols):       rd_data = Cols;
      12'(systole_pkg::RegMaxM):            rd_data = MaxM;
      12'(systole_pkg::RegMaxN):            rd_data = MaxN;
      12'(systole_pkg::RegMaxK):            rd_data = MaxK;
      12'(systole_pkg::RegBeatBytes):       rd_data = 4;
      12'(systole_pkg::RegMaxDescriptors):  rd_data = MaxDesc;
      12'(systole_pkg::RegFeatures):        rd_data = '0;  // no vector engine
      default: begin
        // The high words of the address registers and the port bases read
        // 0; beyond the map is an error.
        rd_err = r_addr_q >= 12'(systole_pkg::RegMapEnd);
      end
    endcase
  end

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      b_valid_q   <= 1'b0;
      b_err_q     <= 1'b0;
      r_valid_q   <= 1'b0;
      r_addr_q    <= '0;
      start_q     <= 1'b0;
      done_q      <= 1'b0;
      ready_q     <= 1'b0;
      gie_q       <= 1'b0;
      ier_q       <= '0;
      isr_q       <= '0;
      cmd_q       <= '0;
      mem_bytes_q <= '0;
    end else begin
      if (b_valid_q && axil_req_i.b_ready) b_valid_q <= 1'b0;
      if (r_valid_q && axil_req_i.r_ready) begin
        r_valid_q <= 1'b0;
        if (r_addr_q == 12'(systole_pkg::RegControl)) begin  // read: ap_done and ap_ready clear
          done_q  <= 1'b0;
          ready_q <= 1'b0;
        end
      end
      if (wr) begin
        b_valid_q <= 1'b1;
        b_err_q   <= wr_err;
        if (!wr_err) begin
          unique case (wa)
            12'(systole_pkg::RegControl):         if (wd[0] && !busy_i) start_q <= 1'b1;
            12'(systole_pkg::RegGlobalIntEnable): gie_q <= wd[0];
            12'(systole_pkg::RegIpIntEnable):     ier_q <= wd[1:0];
            12'(systole_pkg::RegIpIntStatus):     isr_q <= isr_q ^ wd[1:0];
            12'(systole_pkg::RegCommandAddrLo):   cmd_q <= AddrBits'(wd);
            12'(systole_pkg::RegMemBytesLo):      mem_bytes_q <= AddrBits'(wd);
            default: ;
          endcase
        end
      end
      if (rd) begin
        r_valid_q <= 1'b1;
        r_addr_q  <= ra;
      end
      if (start_q && !busy_i) start_q <= 1'b0;  // the controller takes it
      if (finish_i) begin
        done_q <= 1'b1;
        ready_q <= 1'b1;
        isr_q  <= isr_q | ier_q;
      end
    end
  end
  assign interrupt_o = gie_q && |isr_q;
  assign start_o     = start_q;
  assign cmd_o       = cmd_q;
  assign mem_bytes_o = mem_bytes_q;
  // Registers are written whole.
  logic unused;
  assign unused = ^axil_req_i.w_strb;
endmodule
