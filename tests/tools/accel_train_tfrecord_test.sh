#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# accel_train from TFRecord files end to end (label emu): Fashion-MNIST-shaped
# shards through the input pipeline, and the collaborative-filtering flow
# (accel_data debian-packages on a made-up status file, a two-tower model
# over hashed names, the ranking report); bad data ends with exit 2 and a
# message naming the file, record and byte offset.
set -u
tool=$1 accel_data=$2 make_idx=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/expect.sh"

mkdir -p "$work/idx" && "$make_idx" "$work/idx" 640 160 >/dev/null || exit 1
"$accel_data" fashion-mnist --data-dir "$work/idx" --out "$work/fm" --shards 3 --validation-examples 64 >/dev/null || exit 1
cat >"$work/fm.yaml" <<YAML
array: 16x16
devices: 2
model: {hidden: [32], classes: 10}
data:
  format: tfrecord
  train: $work/fm/train-*.tfrecord
  validation: $work/fm/validation-*.tfrecord
  test: $work/fm/test-*.tfrecord
  features:
    image: {dtype: float32, shape: [28, 28, 1]}
    label: {dtype: int64}
  inputs: [image]
  shuffle_buffer: 100
train: {epochs: 3, global_batch: 32, learning_rate: 0.003}
YAML
expect 0 "test_accuracy: (0\.[5-9]|1\.0)" --config "$work/fm.yaml"
expect 0 "576 training records in 3 file\(s\), 64 validation, 160 test examples \(TFRecord\)" --config "$work/fm.yaml" --epochs 1
expect 2 "train.global_batch: 1000 is more than the 576 training record\(s\) in data.train \(3 file\(s\)\): no batch" \
  --config "$work/fm.yaml" --global-batch 1000

# Compressed shards (TFRecordOptions' GZIP and ZLIB): written by accel_data,
# read by the pipeline (data.compression: auto by default), and a file that
# the gzip tool compressed reads the same; read as none, the error says how.
train_tool=$tool tool=$accel_data
expect 0 "wrote 576 records" fashion-mnist --data-dir "$work/idx" --out "$work/fmgz" --shards 3 \
  --validation-examples 64 --compression gzip
expect 0 "wrote 576 records" fashion-mnist --data-dir "$work/idx" --out "$work/fmzl" --shards 3 \
  --validation-examples 64 --compression zlib
gzip -c "$work/fm/test-00000-of-00001.tfrecord" >"$work/external.tfrecord.gz"
expect 0 "external.tfrecord.gz: 160 records, .*every CRC correct" show "$work/external.tfrecord.gz" --records 0
expect 2 "record 0 at byte 0: corrupted record: length CRC mismatch .*; the file starts like gzip data: read it with compression gzip \(or auto\)" \
  show "$work/external.tfrecord.gz" --compression none
tool=$train_tool
for kind in fmgz fmzl; do
  sed "s|$work/fm/|$work/$kind/|g" "$work/fm.yaml" >"$work/$kind.yaml"
  expect 0 "576 training records in 3 file\(s\), 64 validation, 160 test examples \(TFRecord\)" \
    --config "$work/$kind.yaml" --epochs 1
done
if [[ "$("$tool" --config "$work/fmgz.yaml" --epochs 1 2>&1 | grep '^test_loss')" == \
      "$("$tool" --config "$work/fm.yaml" --epochs 1 2>&1 | grep '^test_loss')" ]]; then
  passes=$((passes + 1))
else
  echo "FAIL: training from gzip files differs from the uncompressed run"; failures=$((failures + 1))
fi
sed 's/^  format: tfrecord$/  format: tfrecord\n  compression: none/' "$work/fmgz.yaml" >"$work/gz-as-none.yaml"
expect 2 "the file starts like gzip data: read it with compression gzip \(or auto\)" \
  --config "$work/gz-as-none.yaml" --epochs 1

# One flipped byte in the data of record 5 of the middle shard (192
# records of one size): named, or skipped on request.
cp -r "$work/fm" "$work/bad"
size=$(stat -c %s "$work/bad/train-00001-of-00003.tfrecord")
printf '\x01' | dd of="$work/bad/train-00001-of-00003.tfrecord" bs=1 seek=$((size / 192 * 5 + 100)) conv=notrunc status=none
sed "s|$work/fm/train|$work/bad/train|" "$work/fm.yaml" >"$work/bad.yaml"
expect 2 "train-00001-of-00003.tfrecord: record 5 at byte $((size / 192 * 5)): corrupted record: data CRC mismatch" \
  --config "$work/bad.yaml" --epochs 1
sed 's/  shuffle_buffer: 100/  shuffle_buffer: 100\n  skip_corrupt: true/' "$work/bad.yaml" >"$work/skip.yaml"
# 576 records make 18 batches of 32 exactly: the skipped record's place is
# taken by one of the epoch's first, and the epoch keeps its 18 batches.
expect 0 "warning: 1 corrupt record\(s\) skipped" --config "$work/skip.yaml" --epochs 1
expect 0 "^18/18 " --config "$work/skip.yaml" --epochs 1
sed "s|$work/fm/train-\*|$work/nothing-*|" "$work/fm.yaml" >"$work/nothing.yaml"
expect 2 "data.train: .*nothing-\*.tfrecord: matches no regular file" --config "$work/nothing.yaml"

# Collaborative filtering: 240 packages that depend on 3 of 12 libraries by
# a planted rule (packages of one class mod 12 share two), hashed names,
# negatives drawn each epoch, a two-tower model with row biases, the ranking
# report.
for p in $(seq 0 239); do
  deps="lib$((p % 12)), lib$(((p * 7 + 3) % 12)) (>= 1.0), lib$(((p / 5) % 12)):any | other"
  printf 'Package: pkg%s\nVersion: 1\nDepends: %s\n\n' "$p" "$deps"
done >"$work/status"
train_tool=$tool tool=$accel_data
expect 0 "training records \([0-9]+ edges \+ 0 negatives each\).* held-out edges \+ 3 negatives each\)" \
  debian-packages --status "$work/status" --no-apt-cache --out "$work/cf" --shards 2 --negatives 3
printf ' continued\nPackage: x\n' >"$work/orphan"
expect 2 "orphan: line 1: a continuation line outside a field" \
  debian-packages --status "$work/orphan" --no-apt-cache --out "$work/none"
printf 'Package: x\nDepends y\n' >"$work/nocolon"
expect 2 "nocolon: line 2: expected 'Field: value', got 'Depends y'" \
  debian-packages --status "$work/nocolon" --no-apt-cache --out "$work/none"
[[ -e $work/none ]] && { echo "FAIL: a failed conversion created its directory"; failures=$((failures + 1)); }
tool=$train_tool
cat >"$work/cf.yaml" <<YAML
array: 16x16
devices: 2
model:
  classes: 2
  layers:
    - {type: embedding, input_dim: [512, 512], output_dim: 8}
    - {type: dense, units: 16, activation: relu}
    - {type: dense, units: 9}
    - {type: dot, row_bias: true}
data:
  format: tfrecord
  train: $work/cf/train-*.tfrecord
  test: $work/cf/test-*.tfrecord
  features:
    package: {dtype: string, hash_buckets: 512}
    dependency: {dtype: string, hash_buckets: 512}
    label: {dtype: int64}
  inputs: [package, dependency]
  negatives: {count: 3, feature: dependency}
  shuffle_buffer: 200
train: {epochs: 10, global_batch: 32, learning_rate: 0.01, embedding_learning_rate: 0.3,
        embedding_initial_accumulator: 0.001}
ranking: {k: 3, users: 50}
YAML
expect 0 "\+ 8192 in embedding tables" --config "$work/cf.yaml" --epochs 1
expect 0 "[0-9]+ training records in 2 file\(s\) \(positives; 3 negatives sampled per positive each epoch\)" \
  --config "$work/cf.yaml" --epochs 1
sed 's/feature: dependency}/feature: label}/' "$work/cf.yaml" >"$work/bad-negatives.yaml"
expect 2 "data.negatives.feature: 'label' is not one of data.inputs" --config "$work/bad-negatives.yaml"
# On planted structure the model must rank better than popularity.
ranked=$("$tool" --config "$work/cf.yaml" 2>&1)
model_recall=$(sed -n 's/^  model: .*recall@3 \([0-9.]*\)$/\1/p' <<<"$ranked")
popular_recall=$(sed -n 's/^  popularity: .*recall@3 \([0-9.]*\)$/\1/p' <<<"$ranked")
if [[ -n $model_recall && -n $popular_recall ]] &&
   awk -v m="$model_recall" -v p="$popular_recall" 'BEGIN{exit !(m > p + 0.1)}'; then
  passes=$((passes + 1))
else
  echo "FAIL: the two-tower model's recall@3 ($model_recall) does not beat popularity's ($popular_recall):"
  echo "$ranked" | sed 's/^/    /'
  failures=$((failures + 1))
fi
sed 's/input_dim: \[512, 512\]/input_dim: [512, 100]/' "$work/cf.yaml" >"$work/small-table.yaml"
expect 2 "embedding: example [0-9]+, column 1: id [0-9]+ is not an integer in \[0, 100\)" --config "$work/small-table.yaml"
printf 'ranking: {k: 0}\n' >"$work/k0.yaml"
expect 2 "ranking.k: must be in \[1, 1000\], got 0" --config "$work/k0.yaml"

# Text classification: 960 packages of 480 source packages in 4 sections,
# each description a few of its section's words among shared ones and a
# version, through accel_data debian-descriptions (a second package with
# pkg1's description is left out) and a small Transformer encoder over
# hashed words with a padding mask.
words_libs=(library shared runtime bindings codec) words_games=(game puzzle arcade levels player)
words_python=(python module pytest django asyncio) words_doc=(documentation manual html reference guide)
shared=(the for and of tool data gnu)
sections=(libs games python doc)
for p in $(seq 0 959); do
  section=${sections[$((p % 4))]}
  eval "own=(\"\${words_$section[@]}\")"
  text="${own[$((p * 7 % 5))]} ${shared[$((p % 7))]} ${own[$((p * 3 % 5))]}"
  [[ $((p % 3)) -eq 0 ]] && text="$text ${shared[$((p * 5 % 7))]} (${own[$((p % 5))]}"
  printf 'Package: pkg%s\nSource: src%s (1.0-1)\nSection: contrib/%s\nDescription: %s, v%s\n  The long description.\n\n' \
    "$p" "$((p / 2))" "$section" "$text" "$p"
done >"$work/packages"
printf 'Package: twin\nSection: games\n%s\n\n' "$(grep -m1 'v1$' "$work/packages")" >>"$work/packages"
tool=$accel_data
expect 0 "kept 960 distinct descriptions in 4 sections, as 4 classes \(1 sections merged into other\)" \
  debian-descriptions --packages "$work/packages" --out "$work/text" --classes 4 --shards 2
if [[ "$(tr '\n' ' ' <"$work/text/sections.txt")" == "doc games libs other " ]]; then
  passes=$((passes + 1))
else
  echo "FAIL: sections.txt holds $(tr '\n' ' ' <"$work/text/sections.txt")"; failures=$((failures + 1))
fi
printf 'Package: x\nVersion: 1\n\n' >"$work/nodescription"
expect 2 "lists no package with a section and a description" \
  debian-descriptions --packages "$work/nodescription" --out "$work/none"
expect 2 "--classes 9: the package lists hold 4 sections; give at most 5" \
  debian-descriptions --packages "$work/packages" --out "$work/none" --classes 9
[[ -e $work/none ]] && { echo "FAIL: a failed conversion created its directory"; failures=$((failures + 1)); }
tool=$train_tool
cat >"$work/text.yaml" <<YAML
array: 16x16
devices: 2
model:
  classes: 4
  layers:
    - {type: embedding, name: tokens, input_dim: 1024, output_dim: 16, mask_zero: true}
    - {type: position_embedding, name: positions, sequence_length: 8}
    - {type: add, name: embedded, inputs: [tokens, positions]}
    - {type: multi_head_attention, name: attention, num_heads: 2}
    - {type: add, name: residual1, inputs: [embedded, attention]}
    - {type: layer_normalization, name: norm1, epsilon: 1.0e-5}
    - {type: dense, name: ffn1, units: 32, activation: relu}
    - {type: dense, name: ffn2, units: 16}
    - {type: add, name: residual2, inputs: [norm1, ffn2]}
    - {type: layer_normalization, name: norm2, epsilon: 1.0e-5}
    - {type: global_average_pooling1d, name: pooled}
    - {type: dense, name: classifier, units: 4}
data:
  format: tfrecord
  train: $work/text/train-*.tfrecord
  test: $work/text/test-*.tfrecord
  features:
    text: {dtype: string, split: words, length: 8, hash_buckets: 1024}
    label: {dtype: int64}
  inputs: [text]
  shuffle_buffer: 500
train: {epochs: 12, global_batch: 32, learning_rate: 0.01, embedding_learning_rate: 0.1}
YAML
expect 0 "test_accuracy: (0\.9|1\.0)" --config "$work/text.yaml"
# --retrace: the initial weights and every batch as trained, for another
# framework to retrace the run; a path that cannot be a directory is an
# error before any step.
expect 0 "retrace: $work/rec \(initial weights, 768 training examples in 24 batches, the evaluation sets\)" \
  --config "$work/text.yaml" --epochs 1 --retrace "$work/rec"
for file in initial.safetensors train_inputs.npy train_labels.npy test_inputs.npy test_labels.npy; do
  [[ -s $work/rec/$file ]] || { echo "FAIL: --retrace wrote no $file"; failures=$((failures + 1)); }
done
if head -c 128 "$work/rec/train_inputs.npy" | grep -qa "'shape': (768, 8)" &&
   head -c 128 "$work/rec/test_labels.npy" | grep -qa "'shape': (90,)"; then
  passes=$((passes + 1))
else
  echo "FAIL: the retrace dump's shapes: $(head -c 128 "$work/rec/train_inputs.npy" | tr -d '\0')"
  failures=$((failures + 1))
fi
expect 2 "retrace: $work/text.yaml: not a directory" --config "$work/text.yaml" --epochs 1 --retrace "$work/text.yaml"
sed 's/split: words, length: 8, /split: words, /' "$work/text.yaml" >"$work/nolength.yaml"
expect 2 "feature 'text': length: required for a text feature" --config "$work/nolength.yaml"
sed 's/sequence_length: 8/sequence_length: 6/' "$work/text.yaml" >"$work/short.yaml"
expect 2 "model.layers\[1\] \(positions\): sequence_length: the input has 8 positions, the table 6" \
  --config "$work/short.yaml"

# A character-level language model: fortunes in fortune's format (% between
# entries; one with overstruck bold, which becomes its plain text),
# accel_data fortunes (windows, a vocabulary file, the bigram baseline),
# and a causal decoder whose logits are [positions, classes] with the
# padding left out of the loss. The text follows a rule that a model which
# looks back learns and a bigram model cannot: each fortune repeats one
# made-up word, so a word's second copy is known from its first.
words=(abcde fghij klmno pqrst uvwxy zabcd efghi jklmn opqrs tuvwx)
for f in $(seq 0 99); do
  word=${words[$((f % 10))]}${words[$((f / 10 % 10))]:0:2}
  printf '%s %s %s %s\n%%\n' "$word" "$word" "$word" "$word"
done >"$work/fortunes1"
printf "B\bBo\bol\bld move\n%%\nabcdeab abcdeab abcdeab abcdeab\n" >"$work/fortunes2"
tool=$accel_data
expect 0 "read 101 fortunes from 2 file\(s\)" fortunes --files "$work/fortunes1" "$work/fortunes2" \
  --out "$work/lm2" --length 16 --vocabulary-size 30
if cat "$work/lm2/"*.tfrecord | grep -aq "Bold mov"; then
  passes=$((passes + 1))
else
  echo "FAIL: the overstruck fortune was not cleaned to 'Bold move' (context 'Bold mov')"; failures=$((failures + 1))
fi
corpus=$("$accel_data" fortunes --files "$work/fortunes1" --out "$work/lm" --length 16 --vocabulary-size 30 \
         --validation-fraction 0.15 --test-fraction 0.15 2>&1)
bigram=$(sed -n 's/^bigram baseline (add-[0-9.e-]*): \([0-9.]*\) bits per character on validation.*/\1/p' <<<"$corpus")
expect 2 "/nonexistent: cannot open" fortunes --files /nonexistent --out "$work/none"
printf '%%\n \n%%\n' >"$work/empty"
expect 2 "the fortune files hold no text" fortunes --files "$work/empty" --out "$work/none"
[[ -e $work/none ]] && { echo "FAIL: a failed conversion created its directory"; failures=$((failures + 1)); }
tool=$train_tool
cat >"$work/lm.yaml" <<YAML
array: 16x16
devices: 2
model:
  classes: 32
  layers:
    - {type: embedding, name: tokens, input_dim: 32, output_dim: 16, mask_zero: true}
    - {type: position_embedding, name: positions, sequence_length: 16}
    - {type: add, name: embedded, inputs: [tokens, positions]}
    - {type: multi_head_attention, name: attention, num_heads: 2, causal: true}
    - {type: add, name: residual, inputs: [embedded, attention]}
    - {type: layer_normalization, name: norm, epsilon: 1.0e-5}
    - {type: dense, name: ffn, units: 32, activation: relu}
    - {type: dense, name: next_character, units: 32}
data:
  format: tfrecord
  train: $work/lm/train-*.tfrecord
  validation: $work/lm/validation-*.tfrecord
  test: $work/lm/test-*.tfrecord
  features:
    context: {dtype: string, split: characters, length: 16, vocabulary: $work/lm/vocabulary.txt}
    next: {dtype: string, split: characters, length: 16, vocabulary: $work/lm/vocabulary.txt}
  inputs: [context]
  label: next
  shuffle_buffer: 1000
train:
  epochs: 30
  global_batch: 16
  learning_rate: 0.01
  embedding_learning_rate: 0.1
  loss: {type: sparse_categorical_crossentropy, ignore_class: 0}
  metrics: [{type: accuracy, ignore_class: 0}, {type: perplexity, ignore_class: 0}]
YAML
# The model must beat the bigram baseline by 10 % in bits per character.
lm_run=$("$tool" --config "$work/lm.yaml" --checkpoint-dir "$work/lm_checkpoint" --retrace "$work/lm_retrace" 2>&1)
perplexity=$(sed -n 's/^test_loss: .* - test_perplexity: \([0-9.]*\)$/\1/p' <<<"$lm_run")
if [[ -n $perplexity && -n $bigram ]] && awk -v p="$perplexity" -v b="$bigram" 'BEGIN{exit !(log(p) / log(2) < 0.9 * b)}'; then
  passes=$((passes + 1))
else
  echo "FAIL: the language model's test perplexity '$perplexity' is not 10 % below the bigram's $bigram bits:"
  echo "$lm_run" | tail -5 | sed 's/^/    /'; failures=$((failures + 1))
fi
expect 0 "predict: [0-9]+ examples -> .*lm_logits.npy \(\[16, 32\] logits each\)" predict \
  --checkpoint "$work/lm_checkpoint/model.safetensors" --input "$work/lm_retrace/test_inputs.npy" \
  --output "$work/lm_logits.npy"
sed 's/units: 32}$/units: 30}/' "$work/lm.yaml" >"$work/lm-classes.yaml"
expect 2 "the model ends in \[16, 30\], expected \[32\] logits, or \[positions, 32\]" --config "$work/lm-classes.yaml"

echo "$passes passed, $failures failed"
[[ $failures -eq 0 ]]
