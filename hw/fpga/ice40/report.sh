#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What nextpnr-ice40 reports for the iCEBreaker build (Makefile.fpga
# BOARD=icebreaker): the part's resources in use and each clock's maximum
# frequency against its target, then FIGURE lines.
# Usage: hw/fpga/ice40/report.sh PNR_LOG ARRAY   (ARRAY: e.g. 1x1)
set -euo pipefail
log=$1 array=$2
[[ -f $log ]] || { echo "report.sh: $log not found: run make -f Makefile.fpga BOARD=icebreaker" >&2; exit 1; }
# The last utilisation block and timing lines are those of the routed design.
used() { sed -n "s/.* $1: *\([0-9]*\)\/ *\([0-9]*\).*/\1 \2/p" "$log" | tail -1; }
read -r lc lc_all < <(used ICESTORM_LC)
read -r ram ram_all < <(used ICESTORM_RAM)
read -r dsp dsp_all < <(used ICESTORM_DSP)
read -r spram spram_all < <(used ICESTORM_SPRAM)
core=$(sed -n "s/.*Max frequency for clock  *'clk': \([0-9.]*\) MHz (PASS at \([0-9.]*\) MHz).*/\1 \2/p" "$log" | tail -1)
uart=$(sed -n "s/.*Max frequency for clock  *'clk_i[^']*': \([0-9.]*\) MHz (PASS at \([0-9.]*\) MHz).*/\1 \2/p" "$log" | tail -1)
[[ -n $core && -n $uart ]] || { echo "report.sh: $log has no passing timing for clk and clk_i" >&2; exit 1; }
read -r fmax target <<<"$core"
read -r in_fmax in_target <<<"$uart"
echo "iCEBreaker (iCE40UP5K-SG48), array $array:"
echo "  logic cells $lc of $lc_all, EBR $ram of $ram_all, DSP $dsp of $dsp_all, SPRAM $spram of $spram_all"
echo "  core clock $fmax MHz achieved, $target MHz required; 12 MHz input domain $in_fmax MHz"
fraction=$(awk -v a="$lc" -v b="$lc_all" 'BEGIN {printf "%.3f", a / b}')
echo "FIGURE ice40_fmax_mhz $fmax MHz (core clock $array, required $target MHz, nextpnr-ice40 --up5k)"
echo "FIGURE ice40_lut_fraction $fraction of the UP5K's logic cells ($lc of $lc_all, array $array)"
