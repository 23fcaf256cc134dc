// SPDX-License-Identifier: Apache-2.0
// UART receiver, 8 data bits, no parity, one stop bit, least significant
// bit first. The line is synchronised through two flops, each bit sampled
// in its middle; a start bit that does not last half a bit is a glitch,
// and a byte whose stop bit is low is dropped (a framing error).
module systole_uart_rx #(
  parameter int unsigned ClksPerBit = 104,  // clock / baud rate, >= 4
  localparam int unsigned CountBits = $clog2(ClksPerBit)
) (
  input  logic       clk_i,
  input  logic       rst_ni,
  input  logic       rx_i,
  output logic       valid_o,  // one cycle: data_o holds a received byte
  output logic [7:0] data_o
);
  typedef enum logic [1:0] {Idle, StartBit, DataBits, StopBit} state_e;

  state_e                 state_d, state_q;
  logic [CountBits-1:0]   count_d, count_q;  // clocks to the next sample
  logic [2:0]             bit_d, bit_q;
  logic [7:0]             shift_d, shift_q;
  logic [1:0]             sync_q;
  logic                   line, sample;

  assign line   = sync_q[1];
  assign sample = count_q == '0;

  always_comb begin
    state_d = state_q;
    count_d = sample ? CountBits'(ClksPerBit - 1) : count_q - 1'b1;
    bit_d   = bit_q;
    shift_d = shift_q;
    valid_o = 1'b0;
    unique case (state_q)
      Idle: begin
        count_d = CountBits'(ClksPerBit / 2 - 1);  // to the start bit's middle
        if (!line) state_d = StartBit;
      end
      StartBit: if (sample) begin
        state_d = line ? Idle : DataBits;
        bit_d   = '0;
      end
      DataBits: if (sample) begin
        shift_d = {line, shift_q[7:1]};
        bit_d   = bit_q + 1'b1;
        if (bit_q == 3'd7) state_d = StopBit;
      end
      StopBit: if (sample) begin
        valid_o = line;
        state_d = Idle;
      end
      default: state_d = Idle;
    endcase
  end

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      state_q <= Idle;
      sync_q  <= '1;  // the idle line is high
    end else begin
      state_q <= state_d;
      sync_q  <= {sync_q[0], rx_i};
    end
  end
  // Data: meaningful only in the states that set them.
  always_ff @(posedge clk_i) begin
    count_q <= count_d;
    bit_q   <= bit_d;
    shift_q <= shift_d;
  end
  assign data_o = shift_q;
endmodule
