// SPDX-License-Identifier: Apache-2.0
// Rows from a group of read ports, as if from one faster port: request i
// goes to port i % Ports (its base added to the request's offset), and
// rows come back in request order, each from the port it was asked on. A
// stream of rows of b beats each therefore arrives at up to Ports / b rows
// per cycle. The interface is systole_row_reader's, so an engine does not
// know how many ports feed it.
`include "systole_assert.svh"

module systole_striped_reader #(
  parameter int unsigned Ports = 2,
  parameter int unsigned RowBytes = 64,
  localparam int unsigned ReqBits = systole_pkg::AxiReqBits,
  localparam int unsigned RspBits = systole_pkg::AxiRspBits
) (
  input  logic                         clk_i,
  input  logic                         rst_ni,
  input  logic [Ports*64-1:0]          base_i,        // port p's base at [64 p +: 64]
  // Requests: offsets from the ports' bases.
  input  logic                         req_valid_i,
  output logic                         req_ready_o,
  input  systole_pkg::axi_addr_t       req_addr_i,
  input  logic [31:0]                  req_bytes_i,   // 1 .. RowBytes
  // Rows, in request order.
  output logic                         row_valid_o,
  input  logic                         row_ready_i,
  output logic [8*RowBytes-1:0]        row_o,
  output logic                         idle_o,
  output logic                         error_o,
  input  logic                         clear_error_i,
  output logic [Ports-1:0]             beat_o,        // a beat moved on port p (the counters)
  // The ports (read channels), port p at [p * AxiReqBits +: AxiReqBits].
  output logic [Ports*ReqBits-1:0]     axi_req_o,
  input  logic [Ports*RspBits-1:0]     axi_rsp_i
);
  localparam int unsigned PortBits = Ports > 1 ? $clog2(Ports) : 1;

  logic [PortBits-1:0]         ask_d, ask_q, take_d, take_q;  // the next request's port, the next row's
  logic [Ports-1:0]            req_ready, row_valid, idle, error;
  logic [Ports*8*RowBytes-1:0] rows;

  for (genvar p = 0; p < Ports; p++) begin : g_port
    systole_pkg::axi_req_t axi_req;
    systole_pkg::axi_rsp_t axi_rsp;
    assign axi_rsp = axi_rsp_i[p*RspBits +: RspBits];
    assign axi_req_o[p*ReqBits +: ReqBits] = axi_req;
    systole_axi_beats u_beats (.req_i(axi_req), .rsp_i(axi_rsp), .beat_o(beat_o[p]));
    systole_row_reader #(.RowBytes(RowBytes)) u_reader (
      .clk_i, .rst_ni,
      .req_valid_i(req_valid_i && ask_q == PortBits'(p)), .req_ready_o(req_ready[p]),
      .req_addr_i(base_i[64*p +: 64] + req_addr_i), .req_bytes_i,
      .row_valid_o(row_valid[p]), .row_ready_i(row_ready_i && take_q == PortBits'(p)),
      .row_o(rows[8*RowBytes*p +: 8*RowBytes]),
      .idle_o(idle[p]), .error_o(error[p]), .clear_error_i, .axi_req_o(axi_req), .axi_rsp_i(axi_rsp)
    );
  end

  assign req_ready_o = req_ready[ask_q];
  assign row_valid_o = row_valid[take_q];
  assign row_o       = rows[8*RowBytes*take_q +: 8*RowBytes];
  assign idle_o      = &idle;
  assign error_o     = |error;

  always_comb begin
    ask_d  = ask_q;
    take_d = take_q;
    if (req_valid_i && req_ready_o) ask_d = ask_q == PortBits'(Ports - 1) ? '0 : ask_q + 1'b1;
    if (row_valid_o && row_ready_i) take_d = take_q == PortBits'(Ports - 1) ? '0 : take_q + 1'b1;
  end

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      ask_q  <= '0;
      take_q <= '0;
    end else begin
      ask_q  <= ask_d;
      take_q <= take_d;
    end
  end

  // Rows are taken from the port whose turn it is, never from another.
  `ASSERT(a_ports_in_turn, idle_o |-> ask_q == take_q)
endmodule
