#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# accel_train on the Verilated RTL (label rtl): two epochs of an MLP, one
# of the MLP on two replicas (two Verilated compute units), and one of a
# CNN, on hw_emu 16x16 and on sw_emu 16x16 must write byte-identical
# checkpoints, and the MLP's loss must fall; both runs' traces hold the
# same launches, with the RTL's cycle counts on hw_emu.
set -u
tool=$1 make_idx=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/data" && "$make_idx" "$work/data" 96 32 || exit 1
run() {
  "$tool" --backend "$1" --array 16x16 --devices 1 --data-dir "$work/data" --validation-examples 32 \
    --global-batch 32 --hidden 16 --epochs 2 --learning-rate 0.01 --checkpoint-dir "$work/$1" \
    --trace "$work/$1.json"
}
replicas() {
  "$tool" --backend "$1" --array 16x16 --devices 2 --data-dir "$work/data" --validation-examples 32 \
    --global-batch 32 --hidden 16 --epochs 1 --learning-rate 0.01 --checkpoint-dir "$work/replicas_$1"
}
rtl=$(run hw_emu 2>&1) || { echo "FAIL: hw_emu run: $rtl"; exit 1; }
emu=$(run sw_emu 2>&1) || { echo "FAIL: sw_emu run: $emu"; exit 1; }
launches() { grep -o '"name":"launch"' "$work/$1.json" | wc -l; }
if [[ $(launches hw_emu) -eq 0 || $(launches hw_emu) -ne $(launches sw_emu) ]] ||
   ! grep -q '"busy_cycles":[1-9]' "$work/hw_emu.json"; then
  echo "FAIL: the traces differ in launches ($(launches hw_emu) on hw_emu, $(launches sw_emu) on sw_emu)" \
       "or hw_emu's have no cycle counts"
  exit 1
fi
echo "$rtl" | grep -E "^ *2/2|test_"
if ! cmp -s "$work/hw_emu/checkpoint.safetensors" "$work/sw_emu/checkpoint.safetensors"; then
  echo "FAIL: the hw_emu checkpoint differs from the sw_emu one"
  exit 1
fi
first=$(echo "$rtl" | sed -n 's/.* - loss: \([0-9.]*\) .*/\1/p' | head -1)
last=$(echo "$rtl" | sed -n 's/.* - loss: \([0-9.]*\) .*/\1/p' | tail -1)
if ! awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a) }'; then
  echo "FAIL: the loss did not fall ($first -> $last)"
  exit 1
fi

rtl=$(replicas hw_emu 2>&1) || { echo "FAIL: hw_emu run on two units: $rtl"; exit 1; }
emu=$(replicas sw_emu 2>&1) || { echo "FAIL: sw_emu run on two units: $emu"; exit 1; }
if ! echo "$rtl" | grep -q "2 replica(s) on units 0,1"; then
  echo "FAIL: the two-unit hw_emu run did not train two replicas: $rtl"
  exit 1
fi
if ! cmp -s "$work/replicas_hw_emu/checkpoint.safetensors" "$work/replicas_sw_emu/checkpoint.safetensors"; then
  echo "FAIL: the two-replica hw_emu checkpoint differs from the sw_emu one"
  exit 1
fi

cat >"$work/cnn.yaml" <<'YAML'
model:
  layers:
    - {type: conv2d, filters: 4, kernel_size: 3, strides: 2, padding: same, activation: relu}
    - {type: max_pooling2d, pool_size: 2}
    - {type: batch_normalization}
    - {type: flatten}
    - {type: dense, units: 10}
YAML
cnn() {
  "$tool" --config "$work/cnn.yaml" --backend "$1" --array 16x16 --devices 1 --data-dir "$work/data" \
    --validation-examples 32 --global-batch 32 --epochs 1 --checkpoint-dir "$work/cnn_$1"
}
rtl=$(cnn hw_emu 2>&1) || { echo "FAIL: hw_emu CNN run: $rtl"; exit 1; }
emu=$(cnn sw_emu 2>&1) || { echo "FAIL: sw_emu CNN run: $emu"; exit 1; }
echo "$rtl" | grep -E "^ *2/2|test_"
if ! cmp -s "$work/cnn_hw_emu/checkpoint.safetensors" "$work/cnn_sw_emu/checkpoint.safetensors"; then
  echo "FAIL: the hw_emu CNN checkpoint differs from the sw_emu one"
  exit 1
fi
echo "3 passed, 0 failed"
