#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The iCE40 synthesis of the small-board design, the one script for the
# bitstream (Makefile.fpga BOARD=icebreaker) and for the netlist the tests
# simulate (tests/fpga): yosys synth_ice40 with the UP5K's DSP and SPRAM
# blocks and ABC9's mapping, which the design needs to fit.
# Usage: synth.sh TOP ROWS COLS OUT [CLKS_PER_BIT]
#   TOP   systole_icebreaker (the board) or systole_lite_top (no clocking)
#   OUT   *.json for nextpnr, or *.v for a netlist of iCE40 cells
# Writes OUT (and OUT.log) only when synthesis succeeds.
set -euo pipefail
top=$1 rows=$2 cols=$3 out=$4 clks=${5:-}
root=$(cd "$(dirname "$0")/../../.." && pwd)
rtl=$root/hw/rtl
mapfile -t sources < <(sed "s|^|$rtl/|" "$rtl/lite_sources.txt")
sources+=("$root/hw/fpga/ice40/systole_icebreaker.sv")
params="-set Rows $rows -set Cols $cols"
[[ -z $clks ]] || params+=" -set ClksPerBit $clks"
case $out in
  *.json) write="write_json $out.tmp" ;;
  *.v) write="write_verilog -noattr $out.tmp" ;;
  *) echo "synth.sh: OUT must end in .json or .v, got $out" >&2; exit 2 ;;
esac
mkdir -p "$(dirname "$out")"
yosys -q -l "$out.log" -p "read_verilog -sv -I$rtl ${sources[*]}; chparam $params $top;
    synth_ice40 -abc9 -dsp -spram -top $top; $write" >/dev/null ||
  { tail -5 "$out.log" >&2; rm -f "$out.tmp"; exit 1; }
# yosys reads a reference it cannot resolve (a hierarchical name, a typo)
# as a new net and leaves it undriven; that is an error here.
if grep -E "is implicitly declared|has no driver" "$out.log" >&2; then
  echo "synth.sh: undeclared or undriven nets (above, in $out.log)" >&2
  rm -f "$out.tmp"
  exit 1
fi
mv "$out.tmp" "$out"
