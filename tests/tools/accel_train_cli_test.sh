#!/usr/bin/env bash
# accel_train end to end (label emu) on a small synthetic data set: it
# trains, resuming gives the same checkpoint bytes as an uninterrupted run,
# and bad input ends with exit 2 and a message naming the field or file.
set -u
tool=$1 make_idx=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/data" && "$make_idx" "$work/data" 640 160 || exit 1

source "$(dirname "$0")/expect.sh"

small=(--data-dir "$work/data" --validation-examples 64 --global-batch 32 --array 16x16
       --devices 2 --hidden 32 --learning-rate 0.003)
expect 0 "Epoch 2/2" "${small[@]}" --epochs 2 --checkpoint-dir "$work/straight"
expect 0 "test_accuracy: (0\.[5-9]|1\.0)" "${small[@]}" --epochs 3
expect 0 "^18/18 \[=+\] - .* - val_accuracy" "${small[@]}" --epochs 1
expect 0 "Epoch 1/1" "${small[@]}" --epochs 1 --checkpoint-dir "$work/resumed"
expect 0 "resumed from .* after epoch 1" "${small[@]}" --epochs 2 --checkpoint-dir "$work/resumed" --resume
if cmp -s "$work/straight/checkpoint.safetensors" "$work/resumed/checkpoint.safetensors"; then
  passes=$((passes + 1))
else
  echo "FAIL: a resumed run's checkpoint differs from the uninterrupted run's"
  failures=$((failures + 1))
fi
ls "$work"/*/*.tmp >/dev/null 2>&1 && { echo "FAIL: temporary checkpoint left"; failures=$((failures + 1)); }

# steps_per_execution batches evaluation only: the same numbers come out.
one=$("$tool" "${small[@]}" --epochs 1 --steps-per-execution 1 | grep -E "val_|test_" | sed 's/ - [0-9]*s [0-9]*ms\/step//')
four=$("$tool" "${small[@]}" --epochs 1 --steps-per-execution 4 | grep -E "val_|test_" | sed 's/ - [0-9]*s [0-9]*ms\/step//')
if [[ -n $one && $one == "$four" ]]; then passes=$((passes + 1)); else
  echo "FAIL: steps_per_execution changed the results:"; echo "$one"; echo "$four"; failures=$((failures + 1)); fi
expect 2 "train.steps_per_execution: must be >= 1" "${small[@]}" --steps-per-execution 0

# Bad input.
printf 'train:\n  epochz: 3\n' >"$work/typo.yaml"
printf 'train:\n  epochs: ten\n' >"$work/type.yaml"
printf 'train: [1, 2\n' >"$work/broken.yaml"
expect 2 "typo.yaml: train.epochz: unknown key" --config "$work/typo.yaml"
expect 2 "type.yaml: train.epochs: cannot read 'ten'" --config "$work/type.yaml"
expect 2 "broken.yaml" --config "$work/broken.yaml"
expect 2 "missing.yaml: cannot open" --config "$work/missing.yaml"
expect 2 "global_batch 32 does not divide evenly over 3 replicas" "${small[@]}" --devices 3
expect 2 "devices: expected auto, a count or a list" "${small[@]}" --devices two
expect 2 "devices: a unit is listed twice" "${small[@]}" --devices "[0,0]"
expect 2 "train.optimizer: expected adam or sgd" "${small[@]}" --optimizer rmsprop
expect 2 "train.learning_rate: must be a positive number" "${small[@]}" --learning-rate -1
expect 2 "data.validation_examples: 640 leaves no training examples" "${small[@]}" --validation-examples 640
expect 2 "nowhere/train-images-idx3-ubyte.gz: cannot open" "${small[@]}" --data-dir "$work/nowhere"
mkdir -p "$work/cut" && cp "$work/data"/* "$work/cut/"
gzip -dc "$work/data/train-images-idx3-ubyte.gz" | head -c 5000 | gzip >"$work/cut/train-images-idx3-ubyte.gz"
expect 2 "train-images-idx3-ubyte.gz: header declares .* bytes of data, file has 4984" "${small[@]}" --data-dir "$work/cut"
expect 2 "checkpoint.resume: needs checkpoint.dir" "${small[@]}" --resume
expect 2 "empty/checkpoint.safetensors: cannot open" "${small[@]}" --checkpoint-dir "$work/empty" --resume
expect 2 "hidden is 32 in the checkpoint but 48 in the config" "${small[@]}" --hidden 48 \
  --checkpoint-dir "$work/straight" --resume
expect 2 "--hidden: 'x' is not a layer width" --hidden 32,x
expect 2 "array: expected ROWSxCOLS" "${small[@]}" --array 16

echo "$passes passed, $failures failed"
[[ $failures -eq 0 ]]
