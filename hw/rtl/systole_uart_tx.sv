// SPDX-License-Identifier: Apache-2.0
// UART transmitter, 8 data bits, no parity, one stop bit, least significant
// bit first. Takes a byte when ready_o; the line idles high.
module systole_uart_tx #(
  parameter int unsigned ClksPerBit = 104,  // clock / baud rate
  localparam int unsigned CountBits = $clog2(ClksPerBit)
) (
  input  logic       clk_i,
  input  logic       rst_ni,
  input  logic       valid_i,
  input  logic [7:0] data_i,
  output logic       ready_o,
  output logic       tx_o
);
  logic [9:0]           frame_d, frame_q;  // bit 0 on the line; stop, data, start
  logic [3:0]           bits_d, bits_q;    // bits still to send
  logic [CountBits-1:0] count_d, count_q;  // clocks left of the current bit

  assign ready_o = bits_q == '0;

  always_comb begin
    frame_d = frame_q;
    bits_d  = bits_q;
    count_d = count_q - 1'b1;
    if (ready_o) begin
      count_d = CountBits'(ClksPerBit - 1);
      if (valid_i) begin
        frame_d = {1'b1, data_i, 1'b0};
        bits_d  = 4'd10;
      end
    end else if (count_q == '0) begin
      frame_d = {1'b1, frame_q[9:1]};
      bits_d  = bits_q - 1'b1;
      count_d = CountBits'(ClksPerBit - 1);
    end
  end

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      frame_q <= '1;
      bits_q  <= '0;
    end else begin
      frame_q <= frame_d;
      bits_q  <= bits_d;
    end
  end
  always_ff @(posedge clk_i) count_q <= count_d;
  assign tx_o = frame_q[0];
endmodule
