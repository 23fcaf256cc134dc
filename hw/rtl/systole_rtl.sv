// SPDX-License-Identifier: Apache-2.0
// The RTL kernel as Vitis packages it (package_xo, Makefile.fpga) and as
// every simulation binds it (sim/kernel_harness.h): the names Vitis
// expects (ap_clk, ap_rst_n, s_axi_control, one m_axi_gmem_<arg> AXI4
// master per memory argument) around systole_kernel's typed buses, nothing
// else. The kernel name is this module's, spec::kRtlKernelName; the
// register map is hw/spec's, described to Vitis by the generated
// kernel.xml. Read-only ports have no write channels; IDs, locks, caches,
// QoS and regions are left to their defaults (Vitis ties off what a master
// does not drive).
`include "systole_axi.svh"

module systole_rtl #(
  parameter int unsigned Rows = 32,
  parameter int unsigned Cols = 32
) (
  input  logic ap_clk,
  input  logic ap_rst_n,
  // Vitis finds the kernel's interrupt by this name.
  /* verilator lint_off SYMRSVDWORD */
  output logic interrupt,
  /* verilator lint_on SYMRSVDWORD */
  `SYSTOLE_AXIL_PORTS(s_axi_control),
  `SYSTOLE_AXI_READ_PORTS(m_axi_gmem_cmd),
  `SYSTOLE_AXI_READ_PORTS(m_axi_gmem_a),
  `SYSTOLE_AXI_READ_PORTS(m_axi_gmem_b),
  `SYSTOLE_AXI_READ_PORTS(m_axi_gmem_c),
  `SYSTOLE_AXI_WRITE_PORTS(m_axi_gmem_c)
);
  systole_pkg::axil_req_t ctrl_req;
  systole_pkg::axil_rsp_t ctrl_rsp;
  systole_pkg::axi_req_t      cmd_req, a_req, b_req, c_req;
  systole_pkg::axi_rsp_t      cmd_rsp, a_rsp, b_rsp, c_rsp;

  `SYSTOLE_AXIL_ASSIGN(s_axi_control, ctrl_req, ctrl_rsp)
  `SYSTOLE_AXI_ASSIGN_READ(m_axi_gmem_cmd, cmd_req, cmd_rsp)
  `SYSTOLE_AXI_TIE_WRITE(cmd_rsp)
  `SYSTOLE_AXI_ASSIGN_READ(m_axi_gmem_a, a_req, a_rsp)
  `SYSTOLE_AXI_TIE_WRITE(a_rsp)
  `SYSTOLE_AXI_ASSIGN_READ(m_axi_gmem_b, b_req, b_rsp)
  `SYSTOLE_AXI_TIE_WRITE(b_rsp)
  `SYSTOLE_AXI_ASSIGN_READ(m_axi_gmem_c, c_req, c_rsp)
  `SYSTOLE_AXI_ASSIGN_WRITE(m_axi_gmem_c, c_req, c_rsp)

  systole_kernel #(.Rows(Rows), .Cols(Cols)) u_kernel (
    .clk_i(ap_clk), .rst_ni(ap_rst_n),
    .ctrl_req_i(ctrl_req), .ctrl_rsp_o(ctrl_rsp), .interrupt_o(interrupt),
    .cmd_req_o(cmd_req), .cmd_rsp_i(cmd_rsp), .a_req_o(a_req), .a_rsp_i(a_rsp),
    .b_req_o(b_req), .b_rsp_i(b_rsp), .c_req_o(c_req), .c_rsp_i(c_rsp)
  );

  // The write channels of the read-only ports are not brought out.
  logic unused;
  assign unused = ^{cmd_req.aw, cmd_req.aw_valid, cmd_req.w, cmd_req.w_valid, cmd_req.b_ready,
                    a_req.aw, a_req.aw_valid, a_req.w, a_req.w_valid, a_req.b_ready,
                    b_req.aw, b_req.aw_valid, b_req.w, b_req.w_valid, b_req.b_ready};
endmodule
