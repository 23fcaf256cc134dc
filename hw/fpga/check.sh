#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make -f Makefile.fpga check: what can be checked here without Vitis.
#  1. yosys 0.23 synthesises the RTL modules, generic (synth) and for
#     UltraScale+ (synth_xilinx -family xcup), the 4x4 array, and the
#     vector engine's control at 4 and at VectorLanes columns, with no
#     latches (FULL=1: also the 4x4 core and kernel), and the UART link's
#     modules for iCE40;
#  2. a resource report per module (LUT, FF, DSP, BRAM) from synth_xilinx;
#  3. a fit table: per-PE and per-column cost extrapolated to N x N arrays
#     against each board of hw/spec/systole/boards.h, whose largest arrays
#     must be what fits;
#  4. the Vitis wrapper (systole_rtl) lints clean around the kernel, with
#     its assertions, and
#     every port of the generated kernel.xml is one of its ports;
#  5. the generated link configuration for 1..8 compute units, and a
#     number of banks per unit other than the host's refused.
# QUICK=1 (the default test set's; seconds instead of 15 minutes on two
# cores): step 1 elaborates each module (read_verilog -sv, hierarchy
# -check, proc) and checks it has no latches, without synthesis; steps 2
# and 3, which need synthesis, are left out.
# Usage: hw/fpga/check.sh GEN_FPGA_CONFIG OUT_DIR
set -euo pipefail
gen=$1 out=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
rtl=$root/hw/rtl
mkdir -p "$out"
fail() { echo "check: $*" >&2; exit 1; }
# A parameter of the generated package (written there in hex).
function pkg_param() { echo $((16#$(sed -n "s/^ *localparam int unsigned $1 = 'h\([0-9a-f]*\);.*/\1/p" "$rtl/systole_pkg.sv"))); }

# Every module is read from the kernel's sources, in their order.
mapfile -t sources < <(sed "s|^|$rtl/|" "$rtl/kernel_sources.txt")
# The leaf modules, generic and for UltraScale+; the array at its default
# 4x4 for UltraScale+ (about a minute). FULL=1 adds the core and the whole
# kernel at 4x4: yosys keeps the accumulator and operand buffers in
# flip-flops, which takes it many minutes (hw/rtl/README.md).
modules=(systole_pe_row systole_bf16_mul systole_fp32_add systole_output_stage systole_validate
         systole_axil_regs systole_dma_read systole_row_reader systole_dma_write systole_tile_counter
         systole_front systole_counters systole_weight_engine systole_stream_engine systole_init_engine
         systole_write_engine systole_load_engine systole_striped_reader systole_row_writer
         systole_striped_writer systole_axi_beats systole_axi_join systole_vector_lane)
large=(systole_array)
[[ ${FULL:-0} == 1 ]] && large+=(systole_core systole_kernel)
# The vector engine without its lanes (systole_vector_lane, counted on its
# own): at engine_columns (flow xcup) and at VectorLanes columns (flow
# wide), from which the fit takes a cost per column.
engine=systole_vector_engine engine_columns=4

# 1 + 2. Synthesis; a latch fails the check (select -assert-none). The runs
# are independent: JOBS of them (default: one per core) at a time, the
# longest first. A failed run leaves MODULE.FLOW.failed and its log.
synthesize() {  # synthesize MODULE FLOW
  local module=$1 flow=$2 synth log=$out/$1.$2.log script setup=""
  rm -f "$out/$module.$flow.failed"
  if [[ $module == "$engine" ]]; then
    local columns=$engine_columns
    [[ $flow == wide ]] && columns=$(pkg_param VectorLanes)
    setup="blackbox systole_vector_lane; chparam -set Cols $columns $engine;"
  fi
  # Elaborated, checked for latches, then (unless QUICK=1) synthesised and
  # checked again.
  local latches="select -assert-none t:\$dlatch t:\$latch t:\$dlatchsr" files=("${sources[@]}")
  [[ $flow == ice40 ]] && files=("${link[@]}")  # the small boards' UART host link (not the Alveo kernel's)
  local elaborate="read_verilog -sv -I$rtl ${files[*]}; $setup hierarchy -check -top $module; proc; $latches"
  if [[ ${QUICK:-0} == 1 ]]; then
    script=$elaborate
  elif [[ $flow == ice40 ]]; then
    script="$elaborate; synth_ice40 -top $module"
  else
    local xilinx="synth_xilinx -family xcup -top $module -flatten -noiopad"
    if [[ $flow == generic ]]; then synth="synth -top $module -flatten"; else synth=$xilinx; fi  # xcup, wide
    if [[ $module == systole_vector_lane ]]; then
      # yosys's SAT-based sharing (share) runs out of memory on the lane's
      # datapath, which shares its units by construction: synth_xilinx's
      # coarse step is run without it.
      if [[ $flow == generic ]]; then synth+=" -noshare"; else
        synth="$xilinx -run begin:coarse; techmap -map +/cmp2lut.v -map +/cmp2lcu.v -D LUT_WIDTH=6; alumacc;
          opt; memory -nomap; opt_clean; $xilinx -run map_memory:"
      fi
    fi
    script="$elaborate; $synth; $latches t:\$_DLATCH_* t:LDCE t:LDPE"
  fi
  yosys -q -l "$log" -p "$script; tee -q -o $out/$module.$flow.stat stat" >/dev/null 2>&1 ||
    touch "$out/$module.$flow.failed"
}
link=("$rtl/systole_pkg.sv" "$rtl/systole_uart_rx.sv" "$rtl/systole_uart_tx.sv" "$rtl/systole_uart_bridge.sv")
runs=()
for module in "${large[@]}"; do runs+=("$module xcup"); done
flows=(xcup generic)
[[ ${QUICK:-0} == 1 ]] && flows=(generic)  # elaborating is the same for both
for flow in "${flows[@]}"; do for module in "${modules[@]}"; do runs+=("$module $flow"); done; done
runs+=("$engine xcup" "$engine wide")
for module in systole_uart_rx systole_uart_tx systole_uart_bridge; do runs+=("$module ice40"); done
# The slowest runs (minutes each: the readers' and writers' buffers are
# flip-flops) go first so that no core waits on one at the end.
slow=("systole_striped_reader xcup" "systole_row_reader xcup" "$engine wide" "systole_front xcup"
      "systole_striped_writer xcup" "systole_validate xcup" "systole_vector_lane xcup" "systole_vector_lane generic")
mapfile -t runs < <(printf '%s\n' "${slow[@]}" "${runs[@]}" | awk '!seen[$0]++')
jobs_max=${JOBS:-$(nproc)}
for run in "${runs[@]}"; do
  while (($(jobs -rp | wc -l) >= jobs_max)); do wait -n || true; done
  # shellcheck disable=SC2086  # "MODULE FLOW"
  synthesize $run &
done
wait
for run in "${runs[@]}"; do
  read -r module flow <<<"$run"
  if [[ -e $out/$module.$flow.failed ]]; then
    tail -20 "$out/$module.$flow.log" >&2
    fail "yosys failed on $module ($flow): see $out/$module.$flow.log"
  fi
done

if [[ ${QUICK:-0} != 1 ]]; then
# Cells of a synth_xilinx stat file: LUT FF DSP BRAM(36Kb equivalents).
cells() {
  awk '$2 ~ /^LUT[1-6]$/ {lut += $1}
       $2 ~ /^FD[CPRSE]+$/ {ff += $1}
       $2 ~ /^DSP48E2$/ {dsp += $1}
       $2 ~ /^RAMB36E2$/ {bram += $1}  $2 ~ /^RAMB18E2$/ {bram += $1 / 2}
       END {printf "%d %d %d %g\n", lut, ff, dsp, bram}' \
    <(awk '/Number of cells/ {on = 1; next} on && NF == 2 {print $2, $1}' "$1")
}
{
  echo "# Resources per module (yosys 0.23 synth_xilinx -family xcup)"
  echo
  echo "| module | LUT | FF | DSP48E2 | BRAM36 |"
  echo "|---|---|---|---|---|"
  for module in "${modules[@]}" "${large[@]}"; do
    read -r lut ff dsp bram < <(cells "$out/$module.xcup.stat")
    name=$module
    [[ $module == systole_array || $module == systole_core || $module == systole_kernel ]] && name="$module (4x4)"
    echo "| $name | $lut | $ff | $dsp | $bram |"
  done
  for flow in xcup wide; do
    read -r lut ff dsp bram < <(cells "$out/$engine.$flow.stat")
    columns=$engine_columns; [[ $flow == wide ]] && columns=$(pkg_param VectorLanes)
    echo "| $engine, $columns columns, lanes not included | $lut | $ff | $dsp | $bram |"
  done
} >"$out/resources.md"

# 3. Fit. The kernel holds Rows x Cols PEs, one accumulator adder and one
# output stage per column, the registers, four row readers (read DMAs;
# the A port's is wider than the 64-byte one counted), the write DMA, the
# front end (with the validator), the counters and the four engines. A PE
# costs what the 4x4 array costs per PE (inside the array yosys shares more
# logic than in a lone PE; the skew registers come with it). Not counted:
# the Vitis shell. The on-chip buffers are counted in UltraRAM blocks
# (4096 x 72 bits each), shaped as the RTL uses them: the activation
# buffer is MaxM rows of MaxK = MaxKPerRow x Rows bf16 values, written a
# whole row at a time; the accumulator memory is two banks of MaxM rows of
# Cols fp32 sums. MaxM and MaxKPerRow come from the generated package.
# The vector engine is min(N, VectorLanes) lanes, its operand registers
# (engine_registers below) and its control (walkers, address arithmetic,
# the selection of a chunk's parts): the control's LUTs grow by column
# as they do from 4 to VectorLanes columns (beyond those a straight line),
# its flip-flops and DSPs are what the 4-column engine has besides the
# operand registers.
read -r array_lut array_ff array_dsp _ < <(cells "$out/systole_array.xcup.stat")
pe_lut=$(( (array_lut + 15) / 16 )) pe_ff=$(( (array_ff + 15) / 16 )) pe_dsp=$(( (array_dsp + 15) / 16 ))
read -r add_lut add_ff add_dsp _ < <(cells "$out/systole_fp32_add.xcup.stat")
read -r out_lut out_ff out_dsp _ < <(cells "$out/systole_output_stage.xcup.stat")
fixed_lut=0 fixed_ff=0 fixed_dsp=0
for part in systole_axil_regs systole_row_reader systole_row_reader systole_row_reader systole_row_reader \
            systole_dma_write systole_front systole_counters systole_weight_engine systole_stream_engine \
            systole_init_engine systole_write_engine; do
  read -r l f d _ < <(cells "$out/$part.xcup.stat")
  fixed_lut=$((fixed_lut + l)) fixed_ff=$((fixed_ff + f)) fixed_dsp=$((fixed_dsp + d))
done
max_m=$(pkg_param MaxM) k_per_row=$(pkg_param MaxKPerRow) vector_lanes=$(pkg_param VectorLanes)
beat_bytes=$(pkg_param BeatBytes)
read -r lane_lut lane_ff lane_dsp _ < <(cells "$out/systole_vector_lane.xcup.stat")
read -r engine_lut engine_ff engine_dsp _ < <(cells "$out/$engine.xcup.stat")
read -r wide_lut _ < <(cells "$out/$engine.wide.stat")
# Device totals and the largest array each board is said to fit come from
# hw/spec's board table (gen_fpga_config boards-fit). Kernels get what the
# shell leaves: the budget below is 70 % of the device. The check fails when
# the table's largest array is not what fits.
"$gen" boards-fit >"$out/boards.txt"
awk -v maxm="$max_m" -v kpr="$k_per_row" -v pl="$pe_lut" -v pf="$pe_ff" -v pd="$pe_dsp" -v cl="$((add_lut + out_lut))" \
    -v cf="$((add_ff + out_ff))" -v cd="$((add_dsp + out_dsp))" -v fl="$fixed_lut" -v ff="$fixed_ff" \
    -v fd="$fixed_dsp" -v vl="$vector_lanes" -v ll="$lane_lut" -v lf="$lane_ff" -v ld="$lane_dsp" -v beat="$beat_bytes" \
    -v ec="$engine_columns" -v el="$engine_lut" -v ef="$engine_ff" -v ed="$engine_dsp" -v ew="$wide_lut" \
    -v boards="$out/boards.txt" '
# The cost of an N x N kernel (into lut, flop, dsp), and whether it fits board b.
function cost(n,   lanes) {
  lanes = n < vl ? n : vl
  lut = n * n * pl + n * cl + fl + lanes * ll + el + (n - ec) * engine_column_lut
  flop = n * n * pf + n * cf + ff + lanes * lf + engine_registers(n) + engine_control_ff
  dsp = n * n * pd + n * cd + fd + lanes * ld + ed
  buffers(n)
}
# Per column: x, y, z, w (fp32), and the group of a transposed to_bf16,
# min(2 N, a beat of bf16) rows.
function engine_registers(n,   group) { group = 2 * n < beat / 2 ? 2 * n : beat / 2; return n * (4 * 32 + 16 * group) }
function fits(b) { return lut <= luts[b] * budget && flop <= ffs[b] * budget && dsp <= dsps[b] * budget && uram <= urams[b] * budget }
function ceil(x) { return x == int(x) ? x : int(x) + 1 }
# The buffers of an N x N kernel: kibibytes and UltraRAM blocks (into kib, uram).
function buffers(n,   act_bits, acc_bits) {
  act_bits = maxm * kpr * n * 16; acc_bits = 2 * maxm * n * 32
  kib = (act_bits + acc_bits) / 8192
  uram = ceil(kpr * n * 16 / 72) * ceil(maxm / 4096) + ceil(n * 32 / 72) * ceil(2 * maxm / 4096)
}
BEGIN {
  budget = 0.70
  engine_column_lut = (ew - el) / (vl - ec); engine_control_ff = ef - engine_registers(ec)
  while ((getline line < boards) > 0) {
    split(line, f, " "); b = ++count
    name[b] = f[1]; luts[b] = f[2]; ffs[b] = f[3]; dsps[b] = f[4]; urams[b] = f[5]; table[b] = f[6]
  }
  print "# Fit of an N x N array on the boards of hw/spec/systole/boards.h"
  print ""
  printf "Per PE (the 4x4 array / 16): %d LUT, %d FF, %d DSP48E2. Per column: %d LUT, %d FF. Fixed: %d LUT, %d FF.\n", pl, pf, pd, cl, cf, fl, ff
  printf "Vector engine: min(N, %d) lanes of %d LUT, %d FF, %d DSP48E2 each, its operand registers, and its control: %d LUT at %d columns, %.0f more per column, %d FF, %d DSP48E2.\n", vl, ll, lf, ld, el, ec, engine_column_lut, engine_control_ff, ed
  printf "Budget: %d%% of each device; the Vitis shell takes the rest.\n", budget * 100
  printf "Buffers: activations %d x %d x N bf16, accumulators 2 x %d x N fp32, in UltraRAM (4096 x 72 bits).\n\n", maxm, kpr, maxm
  header = "| array | LUT | FF | DSP | buffers | UltraRAM |"; rule = "|---|---|---|---|---|---|"
  for (b = 1; b <= count; b++) { header = header " fits " name[b] " |"; rule = rule "---|" }
  print header; print rule
  split("4 8 16 24 32 40 48 64 128", sizes, " ")
  for (i = 1; i <= 9; i++) {
    n = sizes[i]
    cost(n)
    row = sprintf("| %dx%d | %d | %d | %d | %d KiB | %d |", n, n, lut, flop, dsp, kib, uram)
    for (b = 1; b <= count; b++) row = row sprintf(" %s (%.0f%% LUT) |", fits(b) ? "yes" : "no", 100 * lut / luts[b])
    print row
  }
  print ""
  bad = 0
  for (b = 1; b <= count; b++) {
    largest = 0
    for (n = 1; n <= 128; n++) { cost(n); if (fits(b)) largest = n }
    cost(128)
    printf "%s: largest square array within the budget **%dx%d**; 128x128 needs %.1fx its LUTs.\n", name[b], largest, largest, lut / luts[b]
    # The table holds the largest supported size: a power of two no larger than what fits.
    supported = 1; while (supported * 2 <= largest) supported *= 2
    if (supported != table[b]) { printf "MISMATCH %s: %dx%d fits, hw/spec/systole/boards.h says %dx%d\n", name[b], supported, supported, table[b], table[b] > "/dev/stderr"; bad = 1 }
  }
  exit bad
}' >"$out/fit.md" || fail "the largest arrays of hw/spec/systole/boards.h are not what fits (above)"
fi

# 4. The Vitis wrapper and the generated kernel.xml agree.
verilator --lint-only -Wall --assert -I"$rtl" -GRows=4 -GCols=4 --top-module systole_rtl "${sources[@]}" \
  || fail "the Vitis wrapper does not lint clean"
# Its ports, with the port macros expanded.
verilator -E -P -I"$rtl" "$rtl/systole_rtl.sv" >"$out/systole_rtl.expanded.sv"
"$gen" kernel-xml >"$out/kernel.xml"
for port in $(sed -n 's/.*<port name="\([a-z_]*\)".*/\1/p' "$out/kernel.xml"); do
  grep -q "${port}_ARVALID\|${port}_AWVALID" "$out/systole_rtl.expanded.sv" ||
    fail "kernel.xml port $port is not a port of hw/rtl/systole_rtl.sv"
done

# 5. Link configurations: 1..8 compute units of the host's 4 banks each fit
# 32 HBM banks, 9 do not, and another number of banks per unit is refused.
banks=$("$gen" boards-mk | sed -n 's/^SPEC_BANKS_PER_CU := //p')
for units in 1 2 4 8; do "$gen" link systole_rtl "$units" "$banks" >"$out/link_$units.cfg"; done
if "$gen" link systole_rtl 9 "$banks" >/dev/null 2>&1; then fail "9 compute units x $banks banks accepted"; fi
if "$gen" link systole_rtl 1 $((banks / 2)) >/dev/null 2>&1; then fail "$((banks / 2)) banks per unit accepted"; fi

if [[ ${QUICK:-0} == 1 ]]; then
  echo "check (QUICK=1: elaborated, not synthesised): passed"
else
  cat "$out/resources.md"; echo; cat "$out/fit.md"
  echo
  echo "check: passed (reports in $out)"
fi
