// SPDX-License-Identifier: Apache-2.0
// Flat AXI ports from the bus types of systole_pkg, in the names Vitis
// gives a kernel's interfaces (<prefix>_ARVALID, ...), and the assignments
// between them and a request/response pair. The Vitis wrapper
// (systole_rtl) and every test top declare their ports with these, so a
// port list is written once; the C++ harnesses bind the same names
// (sim/axi_read_memory.h, sim/axi_write_memory.h).
`ifndef SYSTOLE_AXI_SVH_
`define SYSTOLE_AXI_SVH_

// The read channels (AR, R) of an AXI4 master.
`define SYSTOLE_AXI_READ_PORTS(p)                                                             \
  output logic                                 p``_ARVALID,                                   \
  input  logic                                 p``_ARREADY,                                   \
  output logic [systole_pkg::AxiAddrBits-1:0] p``_ARADDR,                                    \
  output logic [7:0]                           p``_ARLEN,                                     \
  output logic [2:0]                           p``_ARSIZE,                                    \
  output logic [1:0]                           p``_ARBURST,                                   \
  input  logic                                 p``_RVALID,                                    \
  output logic                                 p``_RREADY,                                    \
  input  logic [systole_pkg::AxiDataBits-1:0] p``_RDATA,                                     \
  input  logic [1:0]                           p``_RRESP,                                     \
  input  logic                                 p``_RLAST

// The write channels (AW, W, B) of an AXI4 master.
`define SYSTOLE_AXI_WRITE_PORTS(p)                                                            \
  output logic                                  p``_AWVALID,                                  \
  input  logic                                  p``_AWREADY,                                  \
  output logic [systole_pkg::AxiAddrBits-1:0]  p``_AWADDR,                                   \
  output logic [7:0]                            p``_AWLEN,                                    \
  output logic [2:0]                            p``_AWSIZE,                                   \
  output logic [1:0]                            p``_AWBURST,                                  \
  output logic                                  p``_WVALID,                                   \
  input  logic                                  p``_WREADY,                                   \
  output logic [systole_pkg::AxiDataBits-1:0]  p``_WDATA,                                    \
  output logic [systole_pkg::BeatBytes-1:0] p``_WSTRB,                                    \
  output logic                                  p``_WLAST,                                    \
  input  logic                                  p``_BVALID,                                   \
  output logic                                  p``_BREADY,                                   \
  input  logic [1:0]                            p``_BRESP

// An AXI4-Lite slave.
`define SYSTOLE_AXIL_PORTS(p)                                                                 \
  input  logic        p``_AWVALID,                                                            \
  output logic        p``_AWREADY,                                                            \
  input  logic [11:0] p``_AWADDR,                                                             \
  input  logic        p``_WVALID,                                                             \
  output logic        p``_WREADY,                                                             \
  input  logic [31:0] p``_WDATA,                                                              \
  input  logic [3:0]  p``_WSTRB,                                                              \
  output logic        p``_BVALID,                                                             \
  input  logic        p``_BREADY,                                                             \
  output logic [1:0]  p``_BRESP,                                                              \
  input  logic        p``_ARVALID,                                                            \
  output logic        p``_ARREADY,                                                            \
  input  logic [11:0] p``_ARADDR,                                                             \
  output logic        p``_RVALID,                                                             \
  input  logic        p``_RREADY,                                                             \
  output logic [31:0] p``_RDATA,                                                              \
  output logic [1:0]  p``_RRESP

// Flat read channels <-> req.ar*/req.r_ready and rsp.ar_ready/rsp.r*.
`define SYSTOLE_AXI_ASSIGN_READ(p, req, rsp)                                                  \
  assign p``_ARVALID  = req.ar_valid;                                                         \
  assign p``_ARADDR   = req.ar.addr;                                                          \
  assign p``_ARLEN    = req.ar.len;                                                           \
  assign p``_ARSIZE   = req.ar.size;                                                          \
  assign p``_ARBURST  = req.ar.burst;                                                         \
  assign p``_RREADY   = req.r_ready;                                                          \
  assign rsp.ar_ready = p``_ARREADY;                                                          \
  assign rsp.r_valid  = p``_RVALID;                                                           \
  assign rsp.r.data   = p``_RDATA;                                                            \
  assign rsp.r.resp   = p``_RRESP;                                                            \
  assign rsp.r.last   = p``_RLAST;

// Flat write channels <-> req.aw*/req.w*/req.b_ready and rsp.aw_ready/...
`define SYSTOLE_AXI_ASSIGN_WRITE(p, req, rsp)                                                 \
  assign p``_AWVALID  = req.aw_valid;                                                         \
  assign p``_AWADDR   = req.aw.addr;                                                          \
  assign p``_AWLEN    = req.aw.len;                                                           \
  assign p``_AWSIZE   = req.aw.size;                                                          \
  assign p``_AWBURST  = req.aw.burst;                                                         \
  assign p``_WVALID   = req.w_valid;                                                          \
  assign p``_WDATA    = req.w.data;                                                           \
  assign p``_WSTRB    = req.w.strb;                                                           \
  assign p``_WLAST    = req.w.last;                                                           \
  assign p``_BREADY   = req.b_ready;                                                          \
  assign rsp.aw_ready = p``_AWREADY;                                                          \
  assign rsp.w_ready  = p``_WREADY;                                                           \
  assign rsp.b_valid  = p``_BVALID;                                                           \
  assign rsp.b_resp   = p``_BRESP;

// A read-only port (flat read channels only): its read channels bound as
// above, a slave that never answers on the write channels, and the
// master's write-channel fields, which go nowhere, marked unused.
`define SYSTOLE_AXI_ASSIGN_READ_ONLY(p, req, rsp)                                             \
  `SYSTOLE_AXI_ASSIGN_READ(p, req, rsp)                                                       \
  assign rsp.aw_ready = 1'b0;                                                                 \
  assign rsp.w_ready  = 1'b0;                                                                 \
  assign rsp.b_valid  = 1'b0;                                                                 \
  assign rsp.b_resp   = '0;                                                                   \
  logic p``_unused;                                                                           \
  assign p``_unused = ^{req.aw, req.aw_valid, req.w, req.w_valid, req.b_ready};

`define SYSTOLE_AXIL_ASSIGN(p, req, rsp)                                                      \
  assign req.aw_valid = p``_AWVALID;                                                          \
  assign req.aw_addr  = p``_AWADDR;                                                           \
  assign req.w_valid  = p``_WVALID;                                                           \
  assign req.w_data   = p``_WDATA;                                                            \
  assign req.w_strb   = p``_WSTRB;                                                            \
  assign req.b_ready  = p``_BREADY;                                                           \
  assign req.ar_valid = p``_ARVALID;                                                          \
  assign req.ar_addr  = p``_ARADDR;                                                           \
  assign req.r_ready  = p``_RREADY;                                                           \
  assign p``_AWREADY  = rsp.aw_ready;                                                         \
  assign p``_WREADY   = rsp.w_ready;                                                          \
  assign p``_BVALID   = rsp.b_valid;                                                          \
  assign p``_BRESP    = rsp.b_resp;                                                           \
  assign p``_ARREADY  = rsp.ar_ready;                                                         \
  assign p``_RVALID   = rsp.r_valid;                                                          \
  assign p``_RDATA    = rsp.r_data;                                                           \
  assign p``_RRESP    = rsp.r_resp;

`endif  // SYSTOLE_AXI_SVH_
