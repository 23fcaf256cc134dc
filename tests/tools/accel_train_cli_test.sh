#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# accel_train end to end (label emu) on a small synthetic data set: it
# trains, resuming gives the same checkpoint bytes as an uninterrupted run,
# and bad input ends with exit 2 and a message naming the field or file.
set -u
tool=$1 make_idx=$2
source "$(dirname "$0")/small_idx.sh"
expect 0 "Epoch 2/2" "${small[@]}" --epochs 2 --checkpoint-dir "$work/straight"
expect 0 "test_accuracy: (0\.[5-9]|1\.0)" "${small[@]}" --epochs 3
expect 0 "^18/18 \[=+\] - .* - val_accuracy" "${small[@]}" --epochs 1
expect 0 "^step time: [0-9.]+ ms = array products [0-9.]+ \([0-9]+ %\), staging .* other -?[0-9.]+$" "${small[@]}" --epochs 1
expect 0 "^step time after the first step: [0-9.]+ ms = array products [0-9.]+ \([0-9]+ %\), staging .*, optimizer [0-9.]+ \([0-9]+ %\), other -?[0-9.]+$" "${small[@]}" --epochs 1
expect 0 "Epoch 1/1" "${small[@]}" --epochs 1 --checkpoint-dir "$work/resumed"
expect 0 "resumed from .* after epoch 1" "${small[@]}" --epochs 2 --checkpoint-dir "$work/resumed" --resume
if cmp -s "$work/straight/checkpoint.safetensors" "$work/resumed/checkpoint.safetensors"; then
  passes=$((passes + 1))
else
  echo "FAIL: a resumed run's checkpoint differs from the uninterrupted run's"
  failures=$((failures + 1))
fi
ls "$work"/*/*.tmp* >/dev/null 2>&1 && { echo "FAIL: temporary checkpoint left"; failures=$((failures + 1)); }

# steps_per_execution batches evaluation only: the same numbers come out.
one=$("$tool" "${small[@]}" --epochs 1 --steps-per-execution 1 | grep -E "val_|test_" | sed 's/ - [0-9]*s [0-9]*ms\/step//')
four=$("$tool" "${small[@]}" --epochs 1 --steps-per-execution 4 | grep -E "val_|test_" | sed 's/ - [0-9]*s [0-9]*ms\/step//')
if [[ -n $one && $one == "$four" ]]; then passes=$((passes + 1)); else
  echo "FAIL: steps_per_execution changed the results:"; echo "$one"; echo "$four"; failures=$((failures + 1)); fi
expect 2 "train.steps_per_execution: must be in \[1, 65536\], got 0" "${small[@]}" --steps-per-execution 0

# Bad input.
printf 'train:\n  epochz: 3\n' >"$work/typo.yaml"
printf 'train:\n  epochs: ten\n' >"$work/type.yaml"
printf 'train: [1, 2\n' >"$work/broken.yaml"
expect 2 "typo.yaml: train.epochz: unknown key" --config "$work/typo.yaml"
expect 2 "type.yaml: train.epochs: cannot read 'ten'" --config "$work/type.yaml"
expect 2 "broken.yaml" --config "$work/broken.yaml"
expect 2 "missing.yaml: cannot open" --config "$work/missing.yaml"
expect 2 "global_batch 32 does not divide evenly over 3 replicas" "${small[@]}" --devices 3
expect 2 "devices: expected auto, a count \(1 to 1024\) or a list" "${small[@]}" --devices two
expect 2 "devices: a unit is listed twice" "${small[@]}" --devices "[0,0]"
expect 2 "train.global_batch: 100000 is more than the [0-9]+ training examples: no batch to train on" \
  "${small[@]}" --global-batch 100000
# A key given twice is an error naming both lines (yaml-cpp would read the first).
printf 'train: {epochs: 1}\ndata: {validation_examples: 100}\ntrain:\n  epochs: 2\n' >"$work/twice.yaml"
expect 2 "twice.yaml: train: given twice, on lines 1 and 3" --config "$work/twice.yaml"
printf 'train: {epochs: 1, global_batch: 32, epochs: 2}\n' >"$work/twice-nested.yaml"
expect 2 "twice-nested.yaml: train.epochs: given twice, on lines 1 and 1" --config "$work/twice-nested.yaml"
printf 'model:\n  layers:\n    - {type: dense, units: 8, units: 9}\n' >"$work/twice-layer.yaml"
expect 2 "model.layers\[0\].units: given twice, on lines 3 and 3" --config "$work/twice-layer.yaml"
# A YAML tag would be dropped on reading, a list item with a comma split:
# both are errors, naming the key and quoting what was written.
printf 'train:\n  epochs: !!int 3\n' >"$work/tagged.yaml"
expect 2 "tagged.yaml: train.epochs: YAML tags are not read \(line 2 has '!!int'\)" --config "$work/tagged.yaml"
printf 'model:\n  layers:\n    - {type: embedding, input_dim: ["3,4", 9], output_dim: 2}\n' >"$work/comma.yaml"
expect 2 "model.layers\[0\].input_dim\[0\]: '3,4' is not a plain value" --config "$work/comma.yaml"
expect 2 "devices: expected auto, a count \(1 to 1024\) or a list of unit indices \(got '-1'\)" "${small[@]}" --devices -1
expect 2 "devices: expected auto, a count \(1 to 1024\) or a list of unit indices \(got '4294967297'\)" \
  "${small[@]}" --devices 4294967297
expect 2 "devices: '-1' is not a unit index \(0 to 1023\) \(got '\[0,-1\]'\)" "${small[@]}" --devices "[0,-1]"
expect 0 "device: sw_emu\[3\] 16x16" "${small[@]}" --epochs 1 --device 3
expect 2 "sw_emu device 16 does not exist" "${small[@]}" --device 16
# perf: the board's projection of the training steps, and its parameters.
if "$tool" --help | grep -q -- --board; then
  expect 0 "^  [0-9.]+ ms per step, [0-9]+ samples/s; .* on the host link \([0-9.]+ MB both ways\); bound by " \
    "${small[@]}" --epochs 1 --backend perf \
    --board u55c --devices 2 --clock-mhz 250
  expect 2 "perf.board: expected one of u55c, u280, u50, hypothetical, hw_emu, got 'u99'" "${small[@]}" --backend perf --board u99
  expect 2 "perf: pcie_lanes must be 1, 2, 4, 8 or 16, got 0|perf: pcie_lanes must be 1, 2, 4, 8 or 16, got 5" \
    "${small[@]}" --backend perf --pcie-lanes 5
  expect 2 "perf: u55c has 32 memory ports, enough for 8 compute units of 4 ports each; 9 were asked for" \
    "${small[@]}" --backend perf --devices 9 --global-batch 36
  expect 2 "perf.clock_mhz: cannot read 'fast'|--clock-mhz" "${small[@]}" --backend perf --clock-mhz fast
fi
expect 2 "train.optimizer: expected one of sgd, adam, adamw, adagrad, lars, got 'rmsprop'" "${small[@]}" --optimizer rmsprop
expect 2 "train.learning_rate: must be a positive number, got -1" "${small[@]}" --learning-rate -1
expect 2 "train.schedule: expected one of constant, cosine, exponential, step, got 'linear'" "${small[@]}" --schedule linear
expect 2 "train.decay_steps: the step schedule needs decay_steps >= 1" "${small[@]}" --schedule step
expect 0 "adam lr=0.003 \(cosine\)" "${small[@]}" --epochs 1 --schedule cosine
expect 2 "data.validation_examples: 640 leaves no training examples" "${small[@]}" --validation-examples 640
# data.test_examples: the test set's first examples, or all of it.
expect 0 "576 training, 64 validation, 50 test examples from" "${small[@]}" --epochs 1 --test-examples 50
expect 0 "576 training, 64 validation, 160 test examples from" "${small[@]}" --epochs 1 --test-examples 999
expect 2 "nowhere/train-images-idx3-ubyte.gz: cannot open" "${small[@]}" --data-dir "$work/nowhere"
mkdir -p "$work/cut" && cp "$work/data"/* "$work/cut/"
gzip -dc "$work/data/train-images-idx3-ubyte.gz" | head -c 5000 | gzip >"$work/cut/train-images-idx3-ubyte.gz"
expect 2 "train-images-idx3-ubyte.gz: header declares .* bytes of data, file has 4984" "${small[@]}" --data-dir "$work/cut"
expect 2 "checkpoint.resume: needs checkpoint.dir" "${small[@]}" --resume
expect 2 "empty/checkpoint.safetensors: cannot open" "${small[@]}" --checkpoint-dir "$work/empty" --resume
[[ -e $work/empty ]] && { echo "FAIL: a failed resume created its directory"; failures=$((failures + 1)); }
expect 2 "checkpoint.safetensors: the checkpoint's model .* differs from the config's" "${small[@]}" --hidden 48 \
  --checkpoint-dir "$work/straight" --resume
expect 0 "the run is already finished \(2 of 2 epochs done\)" "${small[@]}" --epochs 2 \
  --checkpoint-dir "$work/straight" --resume
# A checkpoint of another run, or a damaged one, is refused and left as it
# was.
expect 2 "straight/checkpoint.safetensors: seed is [0-9]+ in the checkpoint but 99 in this run" "${small[@]}" \
  --epochs 3 --seed 99 --checkpoint-dir "$work/straight" --resume
expect 2 "global_batch is 32 in the checkpoint but 64 in this run" "${small[@]}" --epochs 3 --global-batch 64 \
  --checkpoint-dir "$work/straight" --resume
mkdir -p "$work/damaged"
cp "$work/straight/checkpoint.safetensors" "$work/damaged/checkpoint.safetensors"
size=$(stat -c %s "$work/damaged/checkpoint.safetensors")
printf '\x7f' | dd of="$work/damaged/checkpoint.safetensors" bs=1 seek=$((size - 100)) conv=notrunc status=none
cp "$work/damaged/checkpoint.safetensors" "$work/damaged.copy"
expect 2 "damaged/checkpoint.safetensors: the data section's CRC-32C is [0-9a-f]{8} but the header records [0-9a-f]{8}: the file is damaged" \
  "${small[@]}" --epochs 3 --checkpoint-dir "$work/damaged" --resume
cmp -s "$work/damaged/checkpoint.safetensors" "$work/damaged.copy" ||
  { echo "FAIL: a refused checkpoint was changed"; failures=$((failures + 1)); }
# A checkpoint directory is one run's: a second run on it is refused,
# naming the holder (here a stand-in holding the lock as a run does).
mkdir -p "$work/locked"
exec 9>"$work/locked/.lock"
flock -n 9 && echo "accel_train pid 4242 on host elsewhere" >&9
expect 2 "locked is in use by accel_train pid 4242 on host elsewhere; wait for that run to end" "${small[@]}" \
  --epochs 1 --checkpoint-dir "$work/locked"
exec 9>&-
expect 0 "Epoch 1/1" "${small[@]}" --epochs 1 --checkpoint-dir "$work/locked"

# Every output is checked before the first step: a file where a directory
# must go, or a directory where a file must go, fails at the start (exit 2,
# no epoch begun) naming the setting and the path.
touch "$work/a_file"
refused_before_training() {  # REGEX FLAGS...
  local regex=$1
  shift
  expect 2 "$regex" "${small[@]}" --epochs 1 "$@"
  if "$tool" "${small[@]}" --epochs 1 "$@" 2>&1 | grep -q "^Epoch 1/"; then
    echo "FAIL: $* began an epoch before refusing the output"; failures=$((failures + 1))
  fi
}
refused_before_training "checkpoint.dir: cannot create '.*a_file': " --checkpoint-dir "$work/a_file"
refused_before_training "checkpoint.dir: cannot create '.*a_file/run': " --checkpoint-dir "$work/a_file/run"
refused_before_training "tensorboard: .*a_file/train: cannot create the directory: Not a directory" \
  --tensorboard "$work/a_file"
refused_before_training "csv_logger.filename: CSVLogger: cannot open .*a_file/log.csv" --csv-log "$work/a_file/log.csv"
refused_before_training "csv_logger.filename: CSVLogger: cannot open " --csv-log "$work"
refused_before_training "trace: .*no_such_dir/t.json: cannot create" --trace "$work/no_such_dir/t.json"
refused_before_training "trace: .*: exists and is not a regular file" --trace "$work"

# A checkpoint of the dense-only format before layers (systole-mlp/1,
# tests/data: one epoch of --hidden 4 on this data set) still resumes.
for dir in legacy legacy_other; do
  mkdir -p "$work/$dir" && cp "$(dirname "$0")/../data/mlp_v1_checkpoint.safetensors" "$work/$dir/checkpoint.safetensors"
done
expect 0 "resumed from .* after epoch 1" "${small[@]}" --hidden 4 --epochs 2 --checkpoint-dir "$work/legacy" --resume
expect 2 "legacy_other/checkpoint.safetensors: hidden is 4 in the checkpoint but 5 in the config" "${small[@]}" \
  --hidden 5 --epochs 2 --checkpoint-dir "$work/legacy_other" --resume

# A CNN with batch normalisation and dropout, written in YAML: it trains,
# writes model.safetensors beside the checkpoint, and resumes to the bytes
# of an uninterrupted run.
cat >"$work/cnn.yaml" <<'YAML'
model:
  layers:
    - {type: conv2d, filters: 4, kernel_size: 3, strides: 2, padding: same, activation: relu}
    - {type: batch_normalization, momentum: 0.9}
    - {type: max_pooling2d, pool_size: [2, 2]}
    - {type: flatten}
    - {type: dropout, rate: 0.25}
    - {type: dense, units: 10}
YAML
cnn=(--config "$work/cnn.yaml" --data-dir "$work/data" --validation-examples 64 --global-batch 32 --array 16x16
     --devices 2 --learning-rate 0.01)
expect 0 "1 batch_normalization +\[14, 14, 4\] +8 params" "${cnn[@]}" --epochs 1
expect 0 "test_accuracy: (0\.[5-9]|1\.0)" "${cnn[@]}" --epochs 3 --checkpoint-dir "$work/cnn_straight"
[[ -f $work/cnn_straight/model.safetensors ]] && passes=$((passes + 1)) ||
  { echo "FAIL: no model.safetensors"; failures=$((failures + 1)); }
expect 0 "Epoch 2/2" "${cnn[@]}" --epochs 2 --checkpoint-dir "$work/cnn_resumed"
expect 0 "resumed from .* after epoch 2" "${cnn[@]}" --epochs 3 --checkpoint-dir "$work/cnn_resumed" --resume
if cmp -s "$work/cnn_straight/checkpoint.safetensors" "$work/cnn_resumed/checkpoint.safetensors"; then
  passes=$((passes + 1))
else
  echo "FAIL: a resumed CNN run's checkpoint differs from the uninterrupted run's"
  failures=$((failures + 1))
fi
expect 2 "a dense-only .* checkpoint|checkpoint's model .* differs" "${cnn[@]}" --checkpoint-dir "$work/straight" --resume

# evaluate and predict from the checkpoint alone (the model travels in it).
trained=$("$tool" "${cnn[@]}" --epochs 3 | grep "^test_")
evaluated=$("$tool" evaluate --checkpoint "$work/cnn_straight/checkpoint.safetensors" --data-dir "$work/data" \
            --array 16x16 --devices 2 --global-batch 32)
if [[ -n $trained && $trained == "$evaluated" ]]; then passes=$((passes + 1)); else
  echo "FAIL: evaluate ($evaluated) differs from the end of training ($trained)"; failures=$((failures + 1)); fi
npy() {  # npy FILE ROWS COLS: a float32 .npy of zeros
  local header="{'descr': '<f4', 'fortran_order': False, 'shape': ($2, $3), }"
  while (( (10 + ${#header} + 1) % 64 )); do header+=" "; done
  { printf '\x93NUMPY\x01\x00'; printf "\\x$(printf %02x $(( (${#header} + 1) % 256 )))\\x$(printf %02x $(( (${#header} + 1) / 256 )))";
    printf '%s\n' "$header"; head -c $(( $2 * $3 * 4 )) /dev/zero; } >"$1"
}
npy "$work/three.npy" 3 784
expect 0 "predict: 3 examples -> .*logits.npy \(\[10\] logits each\)" predict --checkpoint "$work/cnn_straight/model.safetensors" \
  --input "$work/three.npy" --output "$work/logits.npy" --array 16x16 --devices 1
[[ $(stat -c %s "$work/logits.npy") -eq $((128 + 3 * 10 * 4)) ]] && passes=$((passes + 1)) ||
  { echo "FAIL: logits.npy is not 3 x 10 float32"; failures=$((failures + 1)); }
npy "$work/wide.npy" 3 785
expect 2 "wide.npy: expected N examples of 784 values each, got 2355 values in 3 rows" predict \
  --checkpoint "$work/cnn_straight/model.safetensors" --input "$work/wide.npy" --output "$work/out.npy" --array 16x16
[[ -e $work/out.npy ]] || ls "$work"/out.npy.tmp* >/dev/null 2>&1 && { echo "FAIL: a failed predict left a file"; failures=$((failures + 1)); }
expect 2 "predict needs --input X.npy and --output Y.npy" predict --checkpoint "$work/cnn_straight/model.safetensors"
# Where the predictions go is checked before the model runs.
expect 2 "--output: .*missing/out.npy.*No such file or directory" predict \
  --checkpoint "$work/cnn_straight/model.safetensors" --input "$work/three.npy" --output "$work/missing/out.npy"
expect 2 "--output: .*: exists and is not a regular file" predict \
  --checkpoint "$work/cnn_straight/model.safetensors" --input "$work/three.npy" --output "$work"
expect 2 "--checkpoint: required" evaluate --data-dir "$work/data"
# A test set of another shape: the error names the data and the checkpoint.
mkdir -p "$work/narrow" && cp "$work/data"/train-* "$work/narrow/"
/usr/bin/python3 - "$work/narrow" <<'PY'
import gzip, struct, sys
with gzip.open(sys.argv[1] + "/t10k-images-idx3-ubyte.gz", "wb") as f:
    f.write(struct.pack(">IIII", 2051, 4, 28, 14) + bytes(4 * 28 * 14))
with gzip.open(sys.argv[1] + "/t10k-labels-idx1-ubyte.gz", "wb") as f:
    f.write(struct.pack(">II", 2049, 4) + bytes(4))
PY
expect 2 "the test examples of .*/narrow are \[28, 14, 1\], the model of .*cnn_straight/checkpoint.safetensors takes \[28, 28, 1\]" \
  evaluate --checkpoint "$work/cnn_straight/checkpoint.safetensors" --data-dir "$work/narrow" --array 16x16 --global-batch 32
expect 2 "--checkpoint, --input and --output belong to evaluate and predict" "${small[@]}" --checkpoint x

# Plain (not gzipped) IDX files, and a label set of 10 read from the labels.
mkdir -p "$work/plain" && for f in "$work/data"/*.gz; do gzip -dc "$f" >"$work/plain/$(basename "$f" .gz)"; done
expect 0 "model: input \[784\], 10 classes" "${small[@]}" --data-dir "$work/plain" --epochs 1

# A scalar where the file needs a list is refused quoting it (a flag's
# text may be "64" or "256,128").
printf 'model:\n  hidden: 64\n' >"$work/scalar.yaml"
expect 2 "model.hidden: expected a list such as \[64\], got '64'" --config "$work/scalar.yaml" --data-dir "$work/data"
expect 0 "model: input \[784\], 10 classes" "${small[@]}" --hidden 64 --epochs 1

# Bad models: each names the layer and the field.
bad() {  # bad NAME YAML-LAYERS MESSAGE
  printf 'model:\n%b\n' "$2" >"$work/$1.yaml"
  expect 2 "$3" --config "$work/$1.yaml" --data-dir "$work/data" --validation-examples 64 --array 16x16
}
bad kernel '  layers: [{type: conv2d, filters: 4, kernel_size: [3, 0]}, {type: flatten}, {type: dense, units: 10}]' \
  "model.layers\[0\].kernel_size: expected a positive integer or a pair"
bad unknown '  layers: [{type: flatten}, {type: dense, units: 10}, {type: gru}]' \
  "model.layers\[2\].type: unknown layer type 'gru'"
bad notype '  layers: [{units: 10}]' "notype.yaml: model.layers\[0\]: expected a mapping with a type"
bad empty '  layers: []' "empty.yaml: model.layers: got an empty list \(a model needs at least one layer"
expect 2 "model.initial_weights: .*nowhere.safetensors" "${small[@]}" --initial-weights "$work/nowhere.safetensors"
bad both '  hidden: [32]\n  layers: [{type: flatten}]' "both.yaml: model: give either hidden"
bad shape '  layers: [{type: dense, units: 10}]' "model.layers\[0\] \(dense\): dense expects a flat input or rows of one, got \[28, 28, 1\]"
bad logits '  layers: [{type: flatten}, {type: dense, units: 7}]' "model.layers\[1\]: the model ends in \[7\], expected \[10\] logits"
bad input '  input_shape: [700]\n  layers: [{type: dense, units: 10}]' "model.input_shape: \[700\] holds 700 values, the data's examples 784"
expect 2 "label [3-9] of example [0-9]+ is not below 3 \(model.classes\)" "${small[@]}" --classes 3
expect 2 "--hidden \(model.hidden\): cannot read 'x' as a whole number" --hidden 32,x
expect 2 "--hidden \(model.hidden\): cannot read '2junk' as a whole number" --hidden 1,2junk
expect 2 "$work: not a regular file" --config "$work"
mkdir -p "$work/endless" && ln -s /dev/zero "$work/endless/train-images-idx3-ubyte"
expect 2 "endless/train-images-idx3-ubyte: not a regular file" "${small[@]}" --data-dir "$work/endless"
expect 2 "array: expected ROWSxCOLS" "${small[@]}" --array 16
# Sizes are read as typed: no sign, no wrap-around past 2^32.
expect 2 "array: expected ROWSxCOLS such as 128x128, each 1 to 65536, got '-1x-1'" "${small[@]}" --array=-1x-1
expect 2 "array: expected ROWSxCOLS such as 128x128, each 1 to 65536, got '4294967297x4294967297'" \
  "${small[@]}" --array 4294967297x4294967297
expect 2 "array: expected ROWSxCOLS such as 128x128, each 1 to 65536, got '0x16'" "${small[@]}" --array 0x16

# The config schema: --print-config prints every key, the file's and the
# flags' values, as a file that reads back to the same config; numbers are
# checked against their ranges, naming the key and quoting the value.
# A config whose data accel_data makes under /tmp (the language model's
# vocabulary file, which the schema reads) is checked against a stand-in
# vocabulary in the work directory, so the test needs no earlier run.
configs=$(dirname "$0")/../../configs
mkdir -p "$work/configs" "$work/tmp/fortunes"
for c in $(seq 33 126); do printf "\\$(printf '%03o' "$c")\n"; done >"$work/tmp/fortunes/vocabulary.txt"
for original in "$configs"/*.yaml; do
  config=$work/configs/$(basename "$original")
  sed "s|/tmp/|$work/tmp/|g" "$original" >"$config"
  "$tool" --config "$config" --print-config >"$work/printed.yaml" 2>&1 &&
    "$tool" --config "$work/printed.yaml" --print-config >"$work/reprinted.yaml" 2>&1
  if [[ $? -eq 0 ]] && cmp -s "$work/printed.yaml" "$work/reprinted.yaml" &&
     grep -q "^  global_batch: " "$work/printed.yaml"; then
    passes=$((passes + 1))
  else
    echo "FAIL: $(basename "$config") does not round-trip through --print-config:"
    diff "$work/printed.yaml" "$work/reprinted.yaml" | head; failures=$((failures + 1))
  fi
done
expect 0 "^  optimizer: lars$" --config "$configs/cnn.yaml" --optimizer lars --print-config
expect 0 "^  weight_decay: 0.0005$" --weight-decay 5e-4 --print-config
expect 0 "^  weight_decay: ~$" --print-config
expect 0 "^  hidden: \[64, 32\]$" --hidden 64,32 --print-config
expect 2 "train.weight_decay: must be a number >= 0, got -1" --weight-decay -1 --print-config
expect 2 "--learning-rate \(train.learning_rate\): 'nan' is not a finite value of a 32-bit number" --learning-rate nan --print-config
expect 2 "--learning-rate \(train.learning_rate\): '1e-60' is too small for a 32-bit number \(it would read as 0\)" --learning-rate 1e-60 --print-config
expect 2 "--epochs \(train.epochs\): cannot read '1e3' as a whole number" --epochs 1e3
expect 2 "--epochs \(train.epochs\): '4294967296' is larger than 4294967295" --epochs 4294967296
expect 2 "train.clipnorm and train.global_clipnorm: set at most one of them" --clipnorm 1 --global-clipnorm 1
printf 'train:\n  beta2: 1.5\n' >"$work/beta.yaml"
expect 2 "beta.yaml|train.beta2: must be in \[0, 1\), got 1.5" --config "$work/beta.yaml"
printf 'callbacks:\n  early_stopping:\n    patience: -2\n' >"$work/patience.yaml"
expect 2 "patience.yaml: callbacks.early_stopping.patience: cannot read '-2' as a whole number" \
  --config "$work/patience.yaml"
# A graph model (Keras' functional API): a residual block, trained, resumed
# to the bytes of an unbroken run, and malformed graphs named.
cat >"$work/residual.yaml" <<'YAML'
model:
  layers:
    - {type: flatten}
    - {type: dense, name: d1, units: 24, activation: relu}
    - {type: dense, name: d2, units: 24, inputs: d1}
    - {type: add, name: block, inputs: [d2, d1]}
    - {type: relu, inputs: block}
    - {type: dense, units: 10}
YAML
graph=(--data-dir "$work/data" --validation-examples 64 --global-batch 32 --array 16x16 --devices 2
       --learning-rate 0.003)  # $small without --hidden, which would replace the layers
expect 0 "block \(add\) +\[24\] +0 params <- d2, d1" "${graph[@]}" --config "$work/residual.yaml" --epochs 2 \
  --checkpoint-dir "$work/graph_straight"
expect 0 "Epoch 1/1" "${graph[@]}" --config "$work/residual.yaml" --epochs 1 --checkpoint-dir "$work/graph_resumed"
expect 0 "resumed from .* after epoch 1" "${graph[@]}" --config "$work/residual.yaml" --epochs 2 \
  --checkpoint-dir "$work/graph_resumed" --resume
if cmp -s "$work/graph_straight/checkpoint.safetensors" "$work/graph_resumed/checkpoint.safetensors" &&
   grep -q "d1.weight" "$work/graph_straight/checkpoint.safetensors"; then
  passes=$((passes + 1))
else
  echo "FAIL: the graph model's resumed checkpoint differs from the unbroken run's (or lacks d1.weight)"
  failures=$((failures + 1))
fi
printf 'model:\n  layers:\n    - {type: flatten}\n    - {type: dense, name: a, units: 4, inputs: b}\n    - {type: dense, name: b, units: 10, inputs: a}\n' >"$work/cycle.yaml"
expect 2 "model.layers: the inputs of a, b form a cycle or depend on one" "${graph[@]}" --config "$work/cycle.yaml"
printf 'model:\n  layers:\n    - {type: flatten}\n    - {type: dense, units: 10, inputs: [flaten]}\n' >"$work/dangling.yaml"
expect 2 "model.layers\[1\].inputs: no layer is called 'flaten' \(there are: dense, flatten, input\)" \
  "${graph[@]}" --config "$work/dangling.yaml"

# Losses and metrics by name: each metric is logged for training,
# validation and test, and a callback may watch any of them.
printf 'train:\n  metrics: [accuracy, {type: top_k_accuracy, k: 3}, perplexity]\ncallbacks:\n  early_stopping: {monitor: val_top_3_accuracy, patience: 2}\n' >"$work/metrics.yaml"
expect 0 "test_loss: [0-9.]+ - test_accuracy: [0-9.]+ - test_perplexity: [0-9.]+ - test_top_3_accuracy: [0-9.]+" \
  "${small[@]}" --config "$work/metrics.yaml" --epochs 1
printf 'train:\n  metrics: [{type: top_k_accuracy, q: 3}]\n' >"$work/metric_field.yaml"
expect 2 "train.metrics\[0\].q: unknown field for top_k_accuracy" --config "$work/metric_field.yaml" --print-config
printf 'train:\n  loss: hinge\n' >"$work/loss.yaml"
expect 2 "train.loss: type: unknown loss 'hinge' \(expected one of sparse_categorical_crossentropy" \
  --config "$work/loss.yaml" --print-config
printf 'callbacks:\n  early_stopping: {monitor: val_auc}\n' >"$work/monitor.yaml"
expect 2 "callbacks.early_stopping.monitor: expected one of loss, accuracy, val_loss, val_accuracy, got 'val_auc'" \
  --config "$work/monitor.yaml" --print-config
# Each optimizer of the registry trains from the command line.
expect 0 "lars lr=2 \(constant\)" "${small[@]}" --epochs 1 --optimizer lars --learning-rate 2
expect 0 "adamw lr=0.003 \(constant\)" "${small[@]}" --epochs 1 --optimizer adamw --clipnorm 1

echo "$passes passed, $failures failed"
[[ $failures -eq 0 ]]
