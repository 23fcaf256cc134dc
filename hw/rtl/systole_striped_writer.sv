// SPDX-License-Identifier: Apache-2.0
// Rows out through a group of write ports: request i (a whole row, see
// systole_row_writer) goes to port i % Ports, its base added to the
// request's offset. Each port sends its row while the others take the
// next ones, so rows of b beats leave at up to Ports / b rows per cycle.
module systole_striped_writer #(
  parameter int unsigned Ports = 2,
  parameter int unsigned RowBytes = 64,
  localparam int unsigned RowBeats = (RowBytes + systole_pkg::BeatBytes - 1) / systole_pkg::BeatBytes,
  localparam int unsigned ReqBits = systole_pkg::AxiReqBits,
  localparam int unsigned RspBits = systole_pkg::AxiRspBits
) (
  input  logic                         clk_i,
  input  logic                         rst_ni,
  input  logic [Ports*64-1:0]          base_i,        // port p's base at [64 p +: 64]
  input  logic                         req_valid_i,
  output logic                         req_ready_o,
  input  systole_pkg::axi_addr_t       req_addr_i,    // an offset from the ports' bases
  input  logic [31:0]                  req_bytes_i,   // 1 .. RowBytes
  input  logic [RowBeats*systole_pkg::AxiDataBits-1:0] req_row_i,
  // Every row sent and every response in.
  output logic                         idle_o,
  output logic                         error_o,
  input  logic                         clear_error_i,
  output logic [Ports-1:0]             beat_o,        // a beat moved on port p (the counters)
  // The ports (write channels), port p at [p * AxiReqBits +: AxiReqBits].
  output logic [Ports*ReqBits-1:0]     axi_req_o,
  input  logic [Ports*RspBits-1:0]     axi_rsp_i
);
  localparam int unsigned PortBits = Ports > 1 ? $clog2(Ports) : 1;

  logic [PortBits-1:0] ask_d, ask_q;  // the next request's port
  logic [Ports-1:0]    req_ready, idle, error;

  for (genvar p = 0; p < Ports; p++) begin : g_port
    systole_pkg::axi_req_t axi_req;
    systole_pkg::axi_rsp_t axi_rsp;
    assign axi_rsp = axi_rsp_i[p*RspBits +: RspBits];
    assign axi_req_o[p*ReqBits +: ReqBits] = axi_req;
    systole_axi_beats #(.Write(1'b1)) u_beats (.req_i(axi_req), .rsp_i(axi_rsp), .beat_o(beat_o[p]));
    systole_row_writer #(.RowBytes(RowBytes)) u_writer (
      .clk_i, .rst_ni,
      .req_valid_i(req_valid_i && ask_q == PortBits'(p)), .req_ready_o(req_ready[p]),
      .req_addr_i(base_i[64*p +: 64] + req_addr_i), .req_bytes_i, .req_row_i,
      .idle_o(idle[p]), .error_o(error[p]), .clear_error_i, .axi_req_o(axi_req), .axi_rsp_i(axi_rsp)
    );
  end

  assign req_ready_o = req_ready[ask_q];
  assign idle_o      = &idle;
  assign error_o     = |error;

  always_comb begin
    ask_d = ask_q;
    if (req_valid_i && req_ready_o) ask_d = ask_q == PortBits'(Ports - 1) ? '0 : ask_q + 1'b1;
  end

  always_ff @(posedge clk_i) begin
    if (!rst_ni) ask_q <= '0;
    else ask_q <= ask_d;
  end
endmodule
