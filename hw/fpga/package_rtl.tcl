# SPDX-License-Identifier: Apache-2.0
# Packages the RTL kernel (hw/rtl, its top hw/rtl/systole_rtl.sv) as a Vitis
# kernel object. Makefile.fpga runs it:
#   vivado -mode batch -source package_rtl.tcl -tclargs \
#     XO KERNEL_XML ROWS COLS PART WORK_DIR SOURCE...
# Not run here (no Vivado on this machine): see bitstreams/README.md.
if {[llength $argv] < 7} {
  puts stderr "usage: package_rtl.tcl XO KERNEL_XML ROWS COLS PART WORK_DIR SOURCE..."
  exit 2
}
lassign $argv xo kernel_xml rows cols part work
set sources [lrange $argv 6 end]
set kernel systole_rtl

file delete -force $work
create_project -force package $work/project -part $part
add_files -norecurse $sources
set_property top $kernel [current_fileset]
update_compile_order -fileset sources_1

ipx::package_project -root_dir $work/ip -vendor systole -library kernel -taxonomy /KernelIP \
  -import_files -set_current false
ipx::unload_core $work/ip/component.xml
ipx::edit_ip_in_project -upgrade true -name edit_ip -directory $work/ip $work/ip/component.xml
set core [ipx::current_core]
set_property core_revision 1 $core
# The array size is a parameter of the packaged IP.
set_property value $rows [ipx::get_user_parameters Rows -of_objects $core]
set_property value $cols [ipx::get_user_parameters Cols -of_objects $core]
# Every interface of systole_rtl: the control port and one m_axi per
# memory argument (hw/spec's kPortNames).
foreach bus {s_axi_control m_axi_gmem_cmd m_axi_gmem_a0 m_axi_gmem_a1 m_axi_gmem_a2 m_axi_gmem_a3
             m_axi_gmem_b0 m_axi_gmem_b1 m_axi_gmem_c0 m_axi_gmem_c1 m_axi_gmem_c2 m_axi_gmem_c3} {
  ipx::associate_bus_interfaces -busif $bus -clock ap_clk $core
}
set_property sdx_kernel true $core
set_property sdx_kernel_type rtl $core
set_property vitis_drc {ctrl_protocol ap_ctrl_hs} $core
set_property ipi_drc {ignore_freq_hz true} $core
ipx::create_xgui_files $core
ipx::update_checksums $core
ipx::check_integrity -kernel $core
ipx::save_core $core
close_project -delete

package_xo -force -xo_path $xo -kernel_name $kernel -ip_directory $work/ip -kernel_xml $kernel_xml
