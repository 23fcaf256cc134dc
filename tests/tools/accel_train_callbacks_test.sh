#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# accel_train's callbacks end to end (label emu) on a small synthetic data
# set: TensorBoard event files and the CSV log hold every epoch, early
# stopping stops and restores the best epoch's weights exactly,
# save_best_only keeps the best checkpoint, a NaN loss stops the run with
# the last checkpoint intact, progress lines every N steps off a terminal,
# the schedules run, and a trace is written.
set -u
tool=$1 accel_data=$2 make_idx=$3
source "$(dirname "$0")/small_idx.sh"

# TensorBoard and CSVLogger: 3 epochs of 18 steps, batch scalars every 6.
expect 0 "Epoch 3/3" "${small[@]}" --epochs 3 --tensorboard "$work/tb" --csv-log "$work/log.csv" \
  --schedule exponential --decay-steps 18 --decay-rate 0.5
train_events=$(ls "$work"/tb/train/events.out.tfevents.*.v2 2>/dev/null)
validation_events=$(ls "$work"/tb/validation/events.out.tfevents.*.v2 2>/dev/null)
tool=$accel_data
expect 0 "^2 epoch_learning_rate 0.000375$" events "$train_events"  # 0.003 * 0.5^(54 / 18)
expect 0 "train/events.out.tfevents.* 9 scalars, every CRC correct" events "$train_events"
expect 0 "^2 epoch_accuracy " events "$validation_events"
expect 0 "validation/events.out.tfevents.* 6 scalars" events "$validation_events"
tool=$1
lines=$(wc -l <"$work/log.csv")
header=$(head -1 "$work/log.csv")
if [[ $lines -eq 4 && $header == "epoch,accuracy,learning_rate,loss,val_accuracy,val_loss" ]] &&
   grep -q "^2,.*,0.000375," "$work/log.csv"; then passes=$((passes + 1)); else
  echo "FAIL: the CSV log:"; cat "$work/log.csv"; failures=$((failures + 1)); fi
# The event file's epoch_loss is the CSV's (a float32 of the same value).
csv_loss=$(sed -n '2p' "$work/log.csv" | cut -d, -f4)
event_loss=$("$accel_data" events "$train_events" | awk '$2 == "epoch_loss" && $1 == 0 {print $3}')
if [[ -n $csv_loss && -n $event_loss ]] &&
   awk -v a="$csv_loss" -v b="$event_loss" 'BEGIN{d = a - b; exit !(d * d < 1e-12 * a * a)}'; then
  passes=$((passes + 1))
else
  echo "FAIL: epoch 0's loss: CSV $csv_loss, event file $event_loss"; failures=$((failures + 1))
fi
printf 'tensorboard: {dir: %s, update_freq: 6}\n' "$work/tb_batches" >"$work/tb.yaml"
expect 0 "Epoch 2/2" --config "$work/tb.yaml" "${small[@]}" --epochs 2
tool=$accel_data
batch_events=$(ls "$work"/tb_batches/train/events.out.tfevents.*.v2)
expect 0 "^36 batch_loss " events "$batch_events"
expect 0 " 18 scalars, every CRC correct" events "$batch_events"  # 6 batch pairs, 2 epochs of 3
tool=$1

# EarlyStopping with restore_best_weights: no epoch beats the first by
# min_delta 10, so the run stops after epoch 2 with epoch 1's weights,
# whose test loss a 1-epoch run prints.
one_epoch=$("$tool" "${small[@]}" --epochs 1 | grep "^test_loss")
cat >"$work/early.yaml" <<YAML
callbacks:
  early_stopping: {monitor: val_loss, patience: 1, min_delta: 10, restore_best_weights: true}
YAML
expect 0 "Epoch 2: early stopping \(val_loss has not improved on .* for 1 epoch\(s\)\)" --config "$work/early.yaml" \
  "${small[@]}" --epochs 6
stopped=$("$tool" --config "$work/early.yaml" "${small[@]}" --epochs 6)
if [[ -n $one_epoch ]] && grep -qx "$one_epoch" <<<"$stopped" && ! grep -q "Epoch 3/6" <<<"$stopped"; then
  passes=$((passes + 1))
else
  echo "FAIL: early stopping did not restore epoch 1's weights ($one_epoch):"; echo "$stopped" | sed 's/^/    /'
  failures=$((failures + 1))
fi
printf 'callbacks:\n  early_stopping: {monitor: val_loss}\n' >"$work/early_noval.yaml"
expect 2 "callbacks.early_stopping.monitor: val_loss is not available \(the run has no validation set\)" \
  --config "$work/early_noval.yaml" "${small[@]}" --validation-examples 0 --epochs 2
printf 'callbacks:\n  early_stopping: {monitor: val_los}\n' >"$work/early_typo.yaml"
expect 2 "callbacks.early_stopping.monitor: expected one of loss, accuracy, val_loss, val_accuracy, got 'val_los'" \
  --config "$work/early_typo.yaml" "${small[@]}"

# ModelCheckpoint(save_best_only): the accuracy reaches 1 in epoch 1 and
# cannot improve, so the checkpoint stays the one after epoch 1.
printf 'checkpoint: {dir: %s, save_best_only: true, monitor: val_accuracy}\n' "$work/best" >"$work/best.yaml"
expect 0 "Epoch 2: val_accuracy did not improve from 1\.00000" --config "$work/best.yaml" "${small[@]}" --epochs 3
expect 0 "resumed from .* after epoch 1" --config "$work/best.yaml" "${small[@]}" --epochs 3 --resume

# TerminateOnNaN: a rate that blows the weights up stops the run, naming
# the step, and the checkpoint of the last good epoch stays as it was.
expect 0 "Epoch 1/1" "${small[@]}" --epochs 1 --checkpoint-dir "$work/nan"
cp "$work/nan/checkpoint.safetensors" "$work/good.safetensors"
expect 2 "epoch 2, batch [0-9]+ \(step [0-9]+\): the loss is (NaN|infinite); training stopped \(TerminateOnNaN\); the last checkpoint, .*nan/checkpoint.safetensors after epoch 1, is intact" \
  "${small[@]}" --epochs 3 --checkpoint-dir "$work/nan" --resume --learning-rate 1e30
if cmp -s "$work/nan/checkpoint.safetensors" "$work/good.safetensors"; then passes=$((passes + 1)); else
  echo "FAIL: a NaN run changed the last good checkpoint"; failures=$((failures + 1)); fi
# With TerminateOnNaN off, the NaN weights reach a checkpoint; resuming from
# it is refused, naming the tensor, and leaves it as it was.
printf 'callbacks:\n  terminate_on_nan: false\n' >"$work/no_nan_check.yaml"
expect 0 "Epoch 1/1" --config "$work/no_nan_check.yaml" "${small[@]}" --epochs 1 --checkpoint-dir "$work/nan_weights" \
  --learning-rate 1e30
cp "$work/nan_weights/checkpoint.safetensors" "$work/nan_weights.safetensors"
expect 2 "checkpoint.safetensors: tensor '.*' holds -?(nan|inf); a checkpoint to resume from must hold finite values" \
  --config "$work/no_nan_check.yaml" "${small[@]}" --epochs 2 --checkpoint-dir "$work/nan_weights" --resume
cmp -s "$work/nan_weights/checkpoint.safetensors" "$work/nan_weights.safetensors" && passes=$((passes + 1)) ||
  { echo "FAIL: the refused NaN checkpoint changed"; failures=$((failures + 1)); }
# evaluate and predict refuse it the same way (no 'test_loss: nan', exit 0).
expect 2 "model.safetensors: tensor '.*' holds -?(nan|inf); a checkpoint to evaluate or predict with must hold finite values" \
  evaluate --checkpoint "$work/nan_weights/model.safetensors" "${small[@]}"

# Progress every N steps when the output is not a terminal (it is a pipe
# here), and a linear warmup.
expect 0 "^ 6/18 \[=+>\.+\] - .* loss: " "${small[@]}" --epochs 1 --log-every 6
expect 0 "adam lr=0.003 \(step\)" "${small[@]}" --epochs 1 --schedule step --decay-steps 5 --warmup-steps 3

# A trace: written at the end, whole, with the host's spans and every
# launch with its counters (the JSON itself is checked in training_test).
expect 0 "trace: .*trace.json \([0-9]+ events; open it in ui.perfetto.dev" "${small[@]}" --epochs 1 \
  --trace "$work/trace.json"
for needle in '"traceEvents"' '"name":"data wait"' '"name":"step"' '"name":"validation"' '"name":"all-reduce"' \
              '"name":"launch"' '"busy_cycles"' '"dma_read_bytes"' '"name":"device: compute unit 1"'; do
  if grep -qF "$needle" "$work/trace.json"; then passes=$((passes + 1)); else
    echo "FAIL: the trace has no $needle"; failures=$((failures + 1)); fi
done

# Where the trace goes is checked before the first step: a missing
# directory or a directory's name ends the run at once (exit 2), with no
# training done and nothing written.
expect 2 "trace: .*missing/trace.json.*No such file or directory" "${small[@]}" --epochs 1 \
  --trace "$work/missing/trace.json"
expect 2 "trace: .*: exists and is not a regular file" "${small[@]}" --epochs 1 --trace "$work"
if "$tool" "${small[@]}" --epochs 1 --trace "$work" 2>&1 | grep -q "^Epoch 1/1"; then
  echo "FAIL: a bad --trace path was found only after training"; failures=$((failures + 1))
else
  passes=$((passes + 1))
fi

echo "$passes passed, $failures failed"
[[ $failures -eq 0 ]]
