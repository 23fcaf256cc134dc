// SPDX-License-Identifier: Apache-2.0
// The iCEBreaker board (iCE40UP5K-SG48): the small-board design
// (systole_lite_top) on the board's 12 MHz oscillator divided by three, its
// FTDI UART (the second channel of the board's USB port) and its two LEDs.
// The core clock is 4 MHz because the single-cycle fp32 adders of the array
// and the output stage close timing at about 5.5 MHz on this part, short
// of the next divisor's 6 MHz; the UART runs at 115,200 baud from it (35
// clocks a bit, 0.8 % slow, well inside a UART's tolerance).
module systole_icebreaker #(
  parameter int unsigned Rows = 1,
  parameter int unsigned Cols = 1
) (
  input  logic clk_i,         // 12 MHz, pin 35
  input  logic rx_i,          // from the FTDI chip, pin 6
  output logic tx_o,          // to the FTDI chip, pin 9
  output logic led_red_no,    // on while a launch runs
  output logic led_green_no   // on once the design is out of reset
);
  // 12 MHz / 3: a pulse one input clock in three, onto a global buffer.
  logic [1:0] div_q = 2'd0;
  logic       tick_q = 1'b0;
  logic       clk;
  always_ff @(posedge clk_i) begin
    div_q  <= div_q == 2'd2 ? 2'd0 : div_q + 2'd1;
    tick_q <= div_q == 2'd2;
  end
  SB_GB u_clock_buffer (.USER_SIGNAL_TO_GLOBAL_BUFFER(tick_q), .GLOBAL_BUFFER_OUTPUT(clk));

  // Reset for the first 15 core clocks after configuration (flip-flops
  // start at 0 on iCE40).
  logic [3:0] por_q = 4'd0;
  logic       rst_n;
  always_ff @(posedge clk) if (!rst_n) por_q <= por_q + 4'd1;
  assign rst_n = &por_q;

  logic busy, interrupt, tx;
  systole_lite_top #(.ClksPerBit(35), .Rows(Rows), .Cols(Cols)) u_top (
    .clk_i      (clk),
    .rst_ni     (rst_n),
    .rx_i,
    .tx_o       (tx),
    .busy_o     (busy),
    .interrupt_o(interrupt)
  );
  // The line idles high from configuration on: the transmitter's flip-flops
  // start at 0 like all others, and a low line would be a start bit to the
  // host.
  assign tx_o         = tx || !rst_n;
  assign led_red_no   = !busy;
  assign led_green_no = !rst_n;

  logic unused;
  assign unused = interrupt;
endmodule
