#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The tools on the uart backend, unchanged, through a real serial device
# path: simulated_board serves the Verilated small-board design on a pty;
# accel_gemm multiplies on it and checks the result bit for bit against the
# HLS kernel at the board's array size (1x1). Without a board, the error
# names the port.
# Usage: uart_tools_test.sh SIMULATED_BOARD ACCEL_GEMM
set -euo pipefail
board=$1 gemm=$2
fifo=$(mktemp -u) && mkfifo "$fifo"
out=$(mktemp)
trap 'exec 3>&-; wait 2>/dev/null; rm -f "$fifo" "$out"' EXIT
"$board" <"$fifo" >"$out" &
exec 3>"$fifo"  # the board serves until this closes
for _ in $(seq 100); do [[ -s $out ]] && break; sleep 0.1; done
port=$(head -1 "$out")
[[ $port == /dev/* ]] || { echo "simulated_board printed no device path" >&2; exit 1; }
"$gemm" --backend uart --device "$port" --m 13 --n 5 --k 9 --bias --relu --verify full --seed 3 | tee "$out.gemm"
grep -q "bit-exact against the HLS kernel" "$out.gemm"
rm -f "$out.gemm"
# No board on the port: the error names it, and the exit code is not 0.
if "$gemm" --backend uart --device /dev/ttySystoleAbsent --m 2 --n 2 --k 2 2>"$out.err"; then
  echo "accel_gemm succeeded without a board" >&2; exit 1
fi
grep -q "/dev/ttySystoleAbsent" "$out.err" || { cat "$out.err" >&2; exit 1; }
rm -f "$out.err"
echo "uart tools: ok"
