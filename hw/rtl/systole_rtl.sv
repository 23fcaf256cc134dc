// SPDX-License-Identifier: Apache-2.0
// The RTL kernel as Vitis packages it (package_xo, Makefile.fpga) and as
// every simulation binds it (sim/kernel_harness.h): the names Vitis
// expects (ap_clk, ap_rst_n, s_axi_control, one m_axi_gmem_<arg> AXI4
// master per memory argument, named as hw/spec's kPortNames) around
// systole_kernel's typed buses, nothing else. The kernel name is this module's, spec::kRtlKernelName; the
// register map is hw/spec's, described to Vitis by the generated
// kernel.xml. Read-only ports have no write channels; IDs, locks, caches,
// QoS and regions are left to their defaults (Vitis ties off what a master
// does not drive).
`include "systole_assert.svh"
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
  `SYSTOLE_AXI_READ_PORTS(m_axi_gmem_a0),
  `SYSTOLE_AXI_READ_PORTS(m_axi_gmem_a1),
  `SYSTOLE_AXI_READ_PORTS(m_axi_gmem_a2),
  `SYSTOLE_AXI_READ_PORTS(m_axi_gmem_a3),
  `SYSTOLE_AXI_READ_PORTS(m_axi_gmem_b0),
  `SYSTOLE_AXI_READ_PORTS(m_axi_gmem_b1),
  `SYSTOLE_AXI_READ_PORTS(m_axi_gmem_c0),
  `SYSTOLE_AXI_WRITE_PORTS(m_axi_gmem_c0),
  `SYSTOLE_AXI_READ_PORTS(m_axi_gmem_c1),
  `SYSTOLE_AXI_WRITE_PORTS(m_axi_gmem_c1),
  `SYSTOLE_AXI_READ_PORTS(m_axi_gmem_c2),
  `SYSTOLE_AXI_WRITE_PORTS(m_axi_gmem_c2),
  `SYSTOLE_AXI_READ_PORTS(m_axi_gmem_c3),
  `SYSTOLE_AXI_WRITE_PORTS(m_axi_gmem_c3)
);
  systole_pkg::axil_req_t ctrl_req;
  systole_pkg::axil_rsp_t ctrl_rsp;
  systole_pkg::axi_req_t  cmd_req, a0_req, a1_req, a2_req, a3_req, b0_req, b1_req, c0_req, c1_req, c2_req, c3_req;
  systole_pkg::axi_rsp_t  cmd_rsp, a0_rsp, a1_rsp, a2_rsp, a3_rsp, b0_rsp, b1_rsp, c0_rsp, c1_rsp, c2_rsp, c3_rsp;

  `SYSTOLE_AXIL_ASSIGN(s_axi_control, ctrl_req, ctrl_rsp)
  `SYSTOLE_AXI_ASSIGN_READ_ONLY(m_axi_gmem_cmd, cmd_req, cmd_rsp)
  `SYSTOLE_AXI_ASSIGN_READ_ONLY(m_axi_gmem_a0, a0_req, a0_rsp)
  `SYSTOLE_AXI_ASSIGN_READ_ONLY(m_axi_gmem_a1, a1_req, a1_rsp)
  `SYSTOLE_AXI_ASSIGN_READ_ONLY(m_axi_gmem_a2, a2_req, a2_rsp)
  `SYSTOLE_AXI_ASSIGN_READ_ONLY(m_axi_gmem_a3, a3_req, a3_rsp)
  `SYSTOLE_AXI_ASSIGN_READ_ONLY(m_axi_gmem_b0, b0_req, b0_rsp)
  `SYSTOLE_AXI_ASSIGN_READ_ONLY(m_axi_gmem_b1, b1_req, b1_rsp)
  `SYSTOLE_AXI_ASSIGN_READ(m_axi_gmem_c0, c0_req, c0_rsp)
  `SYSTOLE_AXI_ASSIGN_WRITE(m_axi_gmem_c0, c0_req, c0_rsp)
  `SYSTOLE_AXI_ASSIGN_READ(m_axi_gmem_c1, c1_req, c1_rsp)
  `SYSTOLE_AXI_ASSIGN_WRITE(m_axi_gmem_c1, c1_req, c1_rsp)
  `SYSTOLE_AXI_ASSIGN_READ(m_axi_gmem_c2, c2_req, c2_rsp)
  `SYSTOLE_AXI_ASSIGN_WRITE(m_axi_gmem_c2, c2_req, c2_rsp)
  `SYSTOLE_AXI_ASSIGN_READ(m_axi_gmem_c3, c3_req, c3_rsp)
  `SYSTOLE_AXI_ASSIGN_WRITE(m_axi_gmem_c3, c3_req, c3_rsp)

  // The groups side by side, port 0 of a group in the low bits.
  systole_kernel #(.Rows(Rows), .Cols(Cols)) u_kernel (
    .clk_i(ap_clk), .rst_ni(ap_rst_n),
    .ctrl_req_i(ctrl_req), .ctrl_rsp_o(ctrl_rsp), .interrupt_o(interrupt),
    .cmd_req_o(cmd_req), .cmd_rsp_i(cmd_rsp),
    .a_req_o({a3_req, a2_req, a1_req, a0_req}), .a_rsp_i({a3_rsp, a2_rsp, a1_rsp, a0_rsp}),
    .b_req_o({b1_req, b0_req}), .b_rsp_i({b1_rsp, b0_rsp}),
    .c_req_o({c3_req, c2_req, c1_req, c0_req}), .c_rsp_i({c3_rsp, c2_rsp, c1_rsp, c0_rsp})
  );

  // The ports named above are the spec's groups.
  `ASSERT_INIT(a_port_groups,
      systole_pkg::APorts == 4 && systole_pkg::BPorts == 2 && systole_pkg::CPorts == 4)
endmodule
