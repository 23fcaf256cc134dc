// SPDX-License-Identifier: Apache-2.0
// The host link of the small boards: turns request frames received over a
// UART into AXI4-Lite register transactions (the kernel's register map, as
// on an Alveo card) and device-memory reads and writes, and answers each
// with a response frame. The framing is hw/spec/systole/uart_link.h's
// (Uart* in systole_pkg); in short:
//
//   request  A5 | command | address (4) | words (2) | write data (4 words) | CRC (2)
//   response 5A | status  | read data (4 words, when OK)                   | CRC (2)
//
// The words of a request go through a buffer of UartMaxWords: a write's data
// is stored as it arrives and reaches its target only once the request's
// CRC has checked, so a bad frame changes nothing; a read's words are all
// fetched before the response starts, so its status covers every word. A
// bad header is answered at once and the bytes after it are dropped until
// the line has been idle for UartIdleBitTimes bit times; a frame cut short
// is dropped, unanswered, after the same idle time. No input leaves the
// bridge waiting for a byte that never comes.
`include "systole_assert.svh"

module systole_uart_bridge #(
  parameter int unsigned ClksPerBit = 104,
  parameter int unsigned MemWords   = 32768,  // device memory, in 32-bit words
  localparam int unsigned MemBits   = $clog2(MemWords)
) (
  input  logic                    clk_i,
  input  logic                    rst_ni,
  // Bytes from and to the UART.
  input  logic                    rx_valid_i,
  input  logic [7:0]              rx_data_i,
  output logic                    tx_valid_o,
  output logic [7:0]              tx_data_o,
  input  logic                    tx_ready_i,
  // The register map, as an AXI4-Lite master.
  output systole_pkg::axil_req_t  axil_req_o,
  input  systole_pkg::axil_rsp_t  axil_rsp_i,
  // Device memory: a word request is taken when mem_ready_i; a read's word
  // comes back with mem_rvalid_i, in order.
  output logic                    mem_valid_o,
  output logic                    mem_write_o,
  output logic [MemBits-1:0]      mem_addr_o,
  output logic [31:0]             mem_wdata_o,
  input  logic                    mem_ready_i,
  input  logic                    mem_rvalid_i,
  input  logic [31:0]             mem_rdata_i
);
  localparam int unsigned IdleClks  = systole_pkg::UartIdleBitTimes * ClksPerBit;
  localparam int unsigned IdleBits  = $clog2(IdleClks + 1);
  localparam int unsigned WordBits  = $clog2(systole_pkg::UartMaxWords + 1);
  localparam int unsigned IndexBits = $clog2(systole_pkg::UartMaxWords);

  typedef enum logic [3:0] {
    Hunt,       // waiting for the request sync byte
    Header,     // command, address, words
    Payload,    // a write's data
    CrcLo, CrcHi,
    Load,       // a write: the next word out of the buffer
    Access,     // one word to or from the target
    RspSync, RspStatus, RspLoad, RspData, RspCrcLo, RspCrcHi,
    Drain       // dropping bytes until the line is idle
  } state_e;

  typedef struct packed {
    state_e                state;
    logic [2:0]            count;     // byte within a header field or word
    logic [7:0]            command;
    logic [31:0]           address;   // byte address of the next word
    logic [WordBits-1:0]   words;     // of the request
    logic [WordBits-1:0]   index;     // the word at hand
    logic [15:0]           crc;
    logic [15:0]           crc_rx;    // the request's CRC field
    logic [31:0]           word;      // assembled, loaded or fetched
    logic [7:0]            status;
    logic                  drain;     // after the response
    logic                  issued;    // the target has the word's request
    logic                  aw_done, w_done;
    logic                  failed;    // the register port answered an error
    logic [IdleBits-1:0]   idle;      // clocks since the last byte, saturating
  } state_t;

  state_t s_d, s_q;
  logic [31:0] buffer_q [systole_pkg::UartMaxWords];
  logic        buf_write;
  logic [IndexBits-1:0] buf_waddr, buf_raddr;
  logic [31:0] buf_wdata, buf_rdata_q;

  // CRC-16/CCITT-FALSE, one byte at a time.
  function automatic logic [15:0] crc_byte(logic [15:0] crc, logic [7:0] data);
    crc_byte = crc ^ {data, 8'h00};
    for (int i = 0; i < 8; i++)
      crc_byte = crc_byte[15] ? {crc_byte[14:0], 1'b0} ^ 16'h1021 : {crc_byte[14:0], 1'b0};
  endfunction

  // One CRC unit for every byte: the received one in the request's states,
  // the one being sent in the response's.
  logic [15:0] crc_next;
  assign crc_next = crc_byte(s_q.crc, s_q.state == RspStatus ? s_q.status :
                                      s_q.state == RspData   ? s_q.word[7:0] : rx_data_i);

  logic is_write, is_memory, header_last, word_last, idle, take_tx;
  logic [7:0] status_of_header;
  assign is_write  = s_q.command == 8'(systole_pkg::UartCmdWriteMemory) || s_q.command == 8'(systole_pkg::UartCmdWriteRegisters);
  assign is_memory = s_q.command == 8'(systole_pkg::UartCmdWriteMemory) || s_q.command == 8'(systole_pkg::UartCmdReadMemory);
  assign word_last = s_q.index == s_q.words - 1'b1;
  assign idle      = s_q.idle == IdleBits'(IdleClks);
  assign take_tx   = tx_valid_o && tx_ready_i;

  // The header's verdict, once its last byte (words, high byte) is in.
  logic [WordBits+1:0] words_in;   // the words field, as received
  logic [33:0]         end_byte;   // address + 4 words
  always_comb begin
    words_in = {rx_data_i, s_q.words[7:0]} > 16'(systole_pkg::UartMaxWords) ? '1 : (WordBits+2)'({rx_data_i, s_q.words[7:0]});
    end_byte = {2'b0, s_q.address} + 34'({words_in, 2'b00});
    if (s_q.command < 8'(systole_pkg::UartCmdWriteMemory) || s_q.command > 8'(systole_pkg::UartCmdReadRegisters))
      status_of_header = 8'(systole_pkg::UartStatusBadCommand);
    else if (words_in == '0 || words_in > (WordBits+2)'(systole_pkg::UartMaxWords))
      status_of_header = 8'(systole_pkg::UartStatusBadLength);
    else if (s_q.address[1:0] != '0 || end_byte > (is_memory ? 34'(4 * MemWords) : 34'(4096)))
      status_of_header = 8'(systole_pkg::UartStatusBadAddress);
    else
      status_of_header = 8'(systole_pkg::UartStatusOk);
  end
  assign header_last = s_q.count == 3'd6;

  always_comb begin
    s_d         = s_q;
    s_d.idle    = rx_valid_i ? '0 : idle ? s_q.idle : s_q.idle + 1'b1;
    tx_valid_o  = 1'b0;
    tx_data_o   = '0;
    axil_req_o  = '0;
    mem_valid_o = 1'b0;
    mem_write_o = is_write;
    mem_addr_o  = MemBits'(s_q.address[31:2]);
    mem_wdata_o = s_q.word;
    buf_write   = 1'b0;
    buf_waddr   = IndexBits'(s_q.index);
    buf_wdata   = s_q.word;
    buf_raddr   = IndexBits'(s_q.index);

    unique case (s_q.state)
      Hunt: if (rx_valid_i && rx_data_i == 8'(systole_pkg::UartRequestSync)) begin
        s_d.state = Header;
        s_d.count = '0;
        s_d.crc   = 16'hFFFF;
      end
      Header: if (rx_valid_i) begin
        s_d.crc   = crc_next;
        s_d.count = s_q.count + 1'b1;
        unique case (s_q.count)
          3'd0: s_d.command = rx_data_i;
          3'd1, 3'd2, 3'd3, 3'd4: s_d.address = {rx_data_i, s_q.address[31:8]};
          3'd5: s_d.words = WordBits'(rx_data_i);
          default: s_d.words = words_in[WordBits-1:0];
        endcase
        if (header_last) begin
          s_d.index  = '0;
          s_d.count  = '0;
          s_d.status = status_of_header;
          if (status_of_header != 8'(systole_pkg::UartStatusOk)) begin
            s_d.state = RspSync;
            s_d.drain = 1'b1;
          end else begin
            s_d.state = is_write ? Payload : CrcLo;
          end
        end
      end else if (idle) s_d.state = Hunt;
      Payload: if (rx_valid_i) begin
        s_d.crc   = crc_next;
        s_d.word  = {rx_data_i, s_q.word[31:8]};
        s_d.count = s_q.count + 1'b1;
        if (s_q.count == 3'd3) begin
          buf_write   = 1'b1;
          buf_wdata   = {rx_data_i, s_q.word[31:8]};
          s_d.count   = '0;
          s_d.index   = s_q.index + 1'b1;
          if (word_last) s_d.state = CrcLo;
        end
      end else if (idle) s_d.state = Hunt;
      CrcLo: if (rx_valid_i) begin
        s_d.crc_rx[7:0] = rx_data_i;
        s_d.state       = CrcHi;
      end else if (idle) s_d.state = Hunt;
      CrcHi: if (rx_valid_i) begin
        s_d.index  = '0;
        s_d.failed = 1'b0;
        s_d.issued = 1'b0;
        if ({rx_data_i, s_q.crc_rx[7:0]} != s_q.crc) begin
          s_d.status = 8'(systole_pkg::UartStatusBadCrc);
          s_d.state  = RspSync;
        end else begin
          s_d.state = is_write ? Load : Access;
        end
      end else if (idle) s_d.state = Hunt;
      Load: begin  // buf_rdata_q holds word index next cycle
        s_d.state = Access;
      end
      Access: begin
        if (is_memory) begin
          mem_valid_o = !s_q.issued;
          mem_wdata_o = is_write ? buf_rdata_q : s_q.word;
          if (mem_valid_o && mem_ready_i) s_d.issued = 1'b1;
        end else if (is_write) begin
          axil_req_o.aw_addr  = s_q.address[11:0];
          axil_req_o.aw_valid = !s_q.aw_done;
          axil_req_o.w_data   = buf_rdata_q;
          axil_req_o.w_strb   = '1;
          axil_req_o.w_valid  = !s_q.w_done;
          axil_req_o.b_ready  = 1'b1;
          if (axil_rsp_i.aw_ready) s_d.aw_done = 1'b1;
          if (axil_rsp_i.w_ready) s_d.w_done = 1'b1;
        end else begin
          axil_req_o.ar_addr  = s_q.address[11:0];
          axil_req_o.ar_valid = !s_q.issued;
          axil_req_o.r_ready  = 1'b1;
          if (axil_rsp_i.ar_ready) s_d.issued = 1'b1;
        end
        // The word is done: a memory write once taken, a memory read once
        // returned, a register write once answered, a register read once
        // its data is in.
        if (is_memory ? (is_write ? mem_valid_o && mem_ready_i : mem_rvalid_i)
                      : (is_write ? axil_rsp_i.b_valid : axil_rsp_i.r_valid)) begin
          if (!is_memory && (is_write ? axil_rsp_i.b_resp[1] : axil_rsp_i.r_resp[1])) s_d.failed = 1'b1;
          if (!is_write) begin
            buf_write = 1'b1;
            buf_wdata = is_memory ? mem_rdata_i : axil_rsp_i.r_data;
          end
          s_d.issued  = 1'b0;
          s_d.aw_done = 1'b0;
          s_d.w_done  = 1'b0;
          s_d.address = s_q.address + 32'd4;
          s_d.index   = s_q.index + 1'b1;
          buf_raddr   = IndexBits'(s_q.index + 1'b1);
          if (word_last) begin
            s_d.index  = '0;
            s_d.status = (s_d.failed || s_q.failed) ? 8'(systole_pkg::UartStatusRegisterError) : 8'(systole_pkg::UartStatusOk);
            s_d.state  = RspSync;
          end else begin
            s_d.state = is_write ? Load : Access;
          end
        end
      end
      RspSync: begin
        tx_valid_o = 1'b1;
        tx_data_o  = 8'(systole_pkg::UartResponseSync);
        if (take_tx) begin
          s_d.crc   = 16'hFFFF;
          s_d.state = RspStatus;
        end
      end
      RspStatus: begin
        tx_valid_o = 1'b1;
        tx_data_o  = s_q.status;
        buf_raddr  = '0;
        if (take_tx) begin
          s_d.crc   = crc_next;
          s_d.count = '0;
          s_d.state = (!is_write && s_q.status == 8'(systole_pkg::UartStatusOk) && !s_q.drain) ? RspLoad : RspCrcLo;
        end
      end
      RspLoad: begin  // buf_rdata_q holds word index
        s_d.word  = buf_rdata_q;
        s_d.state = RspData;
      end
      RspData: begin
        tx_valid_o = 1'b1;
        tx_data_o  = s_q.word[7:0];
        buf_raddr  = IndexBits'(s_q.index + 1'b1);
        if (take_tx) begin
          s_d.crc   = crc_next;
          s_d.word  = {8'h00, s_q.word[31:8]};
          s_d.count = s_q.count + 1'b1;
          if (s_q.count == 3'd3) begin
            s_d.count = '0;
            s_d.index = s_q.index + 1'b1;
            s_d.state = word_last ? RspCrcLo : RspLoad;
          end
        end
      end
      RspCrcLo: begin
        tx_valid_o = 1'b1;
        tx_data_o  = s_q.crc[7:0];
        if (take_tx) s_d.state = RspCrcHi;
      end
      RspCrcHi: begin
        tx_valid_o = 1'b1;
        tx_data_o  = s_q.crc[15:8];
        if (take_tx) begin
          s_d.state = s_q.drain ? Drain : Hunt;
          s_d.drain = 1'b0;
        end
      end
      Drain: if (idle) s_d.state = Hunt;
      default: s_d.state = Hunt;
    endcase
  end

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      s_q <= '0;  // Hunt
    end else begin
      s_q <= s_d;
    end
  end
  // The buffer: one write port, one registered read port (EBR on iCE40).
  always_ff @(posedge clk_i) begin
    if (buf_write) buffer_q[buf_waddr] <= buf_wdata;
    buf_rdata_q <= buffer_q[buf_raddr];
  end

  `ASSERT(a_one_target, !(mem_valid_o && (axil_req_o.aw_valid || axil_req_o.w_valid || axil_req_o.ar_valid)))
  `ASSERT(a_tx_held, tx_valid_o && !tx_ready_i |=> tx_valid_o && $stable(tx_data_o))
endmodule
