#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The tools on the uart backend, unchanged, through a real serial device
# path: simulated_board serves the Verilated small-board design on a pty;
# accel_gemm multiplies on it and checks the result bit for bit against the
# HLS kernel at the board's array size (1x1); accel_train trains a small MLP
# on it (Fashion-MNIST cut to 64 training and 16 test images, as the
# board's 128 KiB hold) and writes the same checkpoint bytes as sw_emu's HLS
# engine at 1x1. Without a board, the error names the port.
# Usage: uart_tools_test.sh SIMULATED_BOARD ACCEL_GEMM ACCEL_TRAIN CONFIG
set -euo pipefail
board=$1 gemm=$2 train=$3 config=$4
fifo=$(mktemp -u) && mkfifo "$fifo"
out=$(mktemp)
work=$(mktemp -d)
trap 'exec 3>&-; wait 2>/dev/null; rm -rf "$fifo" "$out" "$work"' EXIT
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

# The first COUNT records of an IDX file (gzip), its count field rewritten.
cut_idx() {
  local from=$1 to=$2 header=$3 record=$4 count=$5 plain=$work/plain
  zcat "$from" >"$plain"
  { head -c 4 "$plain"
    printf "$(printf '\\x%02x\\x%02x\\x%02x\\x%02x' 0 0 $((count >> 8)) $((count & 255)))"
    dd if="$plain" iflag=skip_bytes,count_bytes skip=8 count=$((header - 8)) status=none
    dd if="$plain" iflag=skip_bytes,count_bytes skip="$header" count=$((count * record)) status=none; } >"$to"
}
data=/usr/share/datasets/fashion-mnist
mkdir -p "$work/data"
cut_idx $data/train-images-idx3-ubyte.gz "$work/data/train-images-idx3-ubyte" 16 784 64
cut_idx $data/train-labels-idx1-ubyte.gz "$work/data/train-labels-idx1-ubyte" 8 1 64
cut_idx $data/t10k-images-idx3-ubyte.gz "$work/data/t10k-images-idx3-ubyte" 16 784 16
cut_idx $data/t10k-labels-idx1-ubyte.gz "$work/data/t10k-labels-idx1-ubyte" 8 1 16
small=(--config "$config" --data-dir "$work/data" --hidden 8 --global-batch 8 --epochs 1 --steps-per-epoch 3
       --validation-examples 16 --steps-per-execution 1 --devices 1)
"$train" "${small[@]}" --backend uart --device "$port" --checkpoint-dir "$work/board" | tee "$out.train"
grep -q "^test_loss" "$out.train"
"$train" "${small[@]}" --backend sw_emu --array 1x1 --engine hls --checkpoint-dir "$work/emu" >/dev/null
cmp "$work/board/checkpoint.safetensors" "$work/emu/checkpoint.safetensors"
rm -f "$out.train"
echo "uart tools: ok"
