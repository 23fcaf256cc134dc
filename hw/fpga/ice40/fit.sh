#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# How much of the compute core fits an iCE40 UltraPlus UP5K, measured:
# yosys synth_ice40 -dsp maps systole_core (the array, the accumulator
# memory, the output stage) at each Rows x Cols, and nextpnr-ice40 places
# and routes it inside core_probe.sv on the UP5K (SG48, as on the
# iCEBreaker) and reports its maximum clock. Prints one row per
# configuration, then FIGURE lines for the largest that fits.
# Usage: hw/fpga/ice40/fit.sh [OUT_DIR]   (about a minute per configuration)
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
out=${1:-$root/build/fpga/ice40-fit}
rtl=$root/hw/rtl
mkdir -p "$out"
for tool in yosys nextpnr-ice40; do
  command -v $tool >/dev/null || { echo "fit.sh: $tool not found (scripts/install-deps installs it)" >&2; exit 1; }
done
mapfile -t sources < <(sed "s|^|$rtl/|" "$rtl/kernel_sources.txt")
# The UP5K's resources (iCE40 UltraPlus data sheet).
luts=5280 dsps=8 ebrs=30
max_m=256  # accumulator rows per bank: 2 banks x 2 copies x 256 x 32 bits = 4 EBR per column
pcf=$out/probe.pcf
printf 'set_io clk_i 35\nset_io din_i 6\nset_io dout_o 9\n' >"$pcf"  # iCEBreaker: 12 MHz clock, FTDI RX/TX pins

echo "| array | SB_LUT4 (core) | of the UP5K | SB_MAC16 | EBR | logic cells placed | Fmax (nextpnr) |"
echo "|---|---|---|---|---|---|---|"
best=""
for shape in 1x1 1x2 2x1 2x2; do  # by PEs, the cheaper shape first
  rows=${shape%x*} cols=${shape#*x} name=$out/core_$shape
  yosys -q -l "$name.synth.log" -p "read_verilog -sv -I$rtl ${sources[*]} $root/hw/fpga/ice40/core_probe.sv;
      chparam -set Rows $rows -set Cols $cols -set MaxM $max_m systole_core_probe;
      hierarchy -check -top systole_core_probe; synth_ice40 -dsp -top systole_core_probe -json $name.json;
      tee -q -o $name.stat stat" >/dev/null 2>&1 || { tail -5 "$name.synth.log" >&2; exit 1; }
  read -r lut dsp ebr < <(awk '$1 == "SB_LUT4" {l = $2} $1 == "SB_MAC16" {d = $2} $1 == "SB_RAM40_4K" {e = $2}
                               END {print l + 0, d + 0, e + 0}' <(sed -n '/Number of cells/,$p' "$name.stat"))
  fraction=$(awk -v a="$lut" -v b="$luts" 'BEGIN {printf "%.3f", a / b}')
  placed="does not fit" fmax="-"
  # A logic cell holds a LUT, a flip-flop and a carry: the packer may need
  # more cells than there are LUTs, and nextpnr says so.
  if ((lut <= luts && dsp <= dsps && ebr <= ebrs)) &&
     nextpnr-ice40 --up5k --package sg48 --json "$name.json" --pcf "$pcf" --freq 1 --seed 1 >"$name.pnr.log" 2>&1; then
    placed=$(sed -n 's/.*ICESTORM_LC: *\([0-9]*\)\/.*/\1/p' "$name.pnr.log" | tail -1)
    fmax=$(sed -n "s/.*Max frequency for clock '[^']*': \([0-9.]*\) MHz.*/\1/p" "$name.pnr.log" | tail -1)
    best="$shape $fraction $fmax"
    fmax="$fmax MHz"
  elif [[ -f $name.pnr.log ]] && grep -q "ICESTORM_LC" "$name.pnr.log"; then
    placed="$(sed -n 's/.*ICESTORM_LC: *\([0-9]*\)\/.*/\1/p' "$name.pnr.log" | tail -1) needed: does not fit"
  fi
  echo "| ${rows}×${cols} | $lut | $fraction | $dsp | $ebr | $placed | $fmax |"
done
[[ -n $best ]] || { echo "fit.sh: no configuration fits" >&2; exit 1; }
read -r shape fraction fmax <<<"$best"
echo "FIGURE ice40_core_lut_fraction $fraction of the UP5K's LUTs (systole_core $shape, MaxM $max_m)"
echo "FIGURE ice40_core_fmax_mhz $fmax MHz (systole_core $shape, nextpnr-ice40 --up5k)"
