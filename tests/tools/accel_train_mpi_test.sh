#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# accel_train under mpirun (label mpi): 2 processes of K replicas (and 3 of
# 2 with the parameters on the cards) end with the same checkpoint bytes as
# 1 process of all their replicas, from IDX or TFRecord data;
# only rank 0 logs; every rank resumes from rank 0's checkpoint; a killed or
# stalled rank ends the job within a bounded time with its rank named; bad
# input ends the job with a message naming the field.
set -u
tool=$1 make_idx=$2 accel_data=$3
work=$(mktemp -d)
jobs_started=()
cleanup() {
  for pid in "${jobs_started[@]}"; do kill -9 "$pid" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/data" && "$make_idx" "$work/data" 640 160 || exit 1
source "$(dirname "$0")/expect.sh"

# CI runs as root; OpenMPI refuses that unless told. --oversubscribe: the
# machine may report fewer slots than processes.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=(mpirun --oversubscribe --bind-to none)
small=(--data-dir "$work/data" --validation-examples 64 --array 16x16 --hidden 32
       --learning-rate 0.003)

same_file() {  # same_file A B WHAT
  if cmp -s "$1" "$2"; then passes=$((passes + 1)); else
    echo "FAIL: $3"; failures=$((failures + 1)); fi
}

# Equivalence: the layout of the replicas over processes does not change a bit.
for layout in "2 1" "2 2"; do
  read -r processes local <<<"$layout"
  total=$((processes * local))
  out=$("${mpi[@]}" -np "$processes" "$tool" "${small[@]}" --global-batch 48 --epochs 2 \
        --devices "$local" --checkpoint-dir "$work/mpi$total" 2>&1) || {
    echo "FAIL: mpirun -np $processes: $out"; failures=$((failures + 1)); continue; }
  "$tool" "${small[@]}" --global-batch 48 --epochs 2 --devices "$total" \
    --checkpoint-dir "$work/one$total" >/dev/null 2>&1 || { echo "FAIL: 1 process x $total"; exit 1; }
  same_file "$work/mpi$total/checkpoint.safetensors" "$work/one$total/checkpoint.safetensors" \
    "$processes processes x $local replicas differ from 1 process x $total replicas"
  # Only rank 0 logs: one header, one line per epoch, the job's replica count.
  if [[ $(grep -c "^Epoch 1/2" <<<"$out") -eq 1 ]] &&
     grep -q "job: $processes processes x $local replica(s) = $total replicas in sync" <<<"$out"; then
    passes=$((passes + 1)); else echo "FAIL: log of mpirun -np $processes:"; echo "$out"; failures=$((failures + 1)); fi
done
# placement: device across processes: each unit updates on the card from
# the job's all-reduce, and the checkpoint (weights and Adam's slots) is
# the host path's, byte for byte.
out=$("${mpi[@]}" -np 2 "$tool" "${small[@]}" --global-batch 48 --epochs 2 --devices 2 --placement device \
      --checkpoint-dir "$work/mpi4_device" 2>&1) || {
  echo "FAIL: mpirun -np 2 --placement device: $out"; failures=$((failures + 1)); }
same_file "$work/mpi4_device/checkpoint.safetensors" "$work/one4/checkpoint.safetensors" \
  "2 processes x 2 replicas with placement: device differ from placement: host"
# Three ranks of two units: each card chains its sum onto the earlier
# ranks' (the middle rank receives one and passes one on).
"$tool" "${small[@]}" --global-batch 48 --epochs 2 --devices 6 --checkpoint-dir "$work/one6" >/dev/null 2>&1 ||
  { echo "FAIL: 1 process x 6"; exit 1; }
out=$("${mpi[@]}" -np 3 "$tool" "${small[@]}" --global-batch 48 --epochs 2 --devices 2 --placement device \
      --checkpoint-dir "$work/mpi6_device" 2>&1) || {
  echo "FAIL: mpirun -np 3 --placement device: $out"; failures=$((failures + 1)); }
same_file "$work/mpi6_device/checkpoint.safetensors" "$work/one6/checkpoint.safetensors" \
  "3 processes x 2 replicas with placement: device differ from 1 process x 6 with placement: host"

# The test must be able to fail: another replica count gives other bits.
if cmp -s "$work/mpi2/checkpoint.safetensors" "$work/mpi4/checkpoint.safetensors"; then
  echo "FAIL: 2 and 4 replicas wrote identical checkpoints: the comparison proves nothing"
  failures=$((failures + 1))
fi

# TFRecord shards: every replica reads its own shard of the files (by file
# for 2 replicas over 3 files, by record for 4), so here too the layout
# over processes does not change a bit.
"$accel_data" fashion-mnist --data-dir "$work/data" --out "$work/fm" --shards 3 --validation-examples 64 \
  >/dev/null || exit 1
cat >"$work/fm.yaml" <<YAML
array: 16x16
model: {hidden: [32], classes: 10}
data:
  format: tfrecord
  train: $work/fm/train-*.tfrecord
  validation: $work/fm/validation-*.tfrecord
  features:
    image: {dtype: float32, shape: [28, 28, 1]}
    label: {dtype: int64}
  inputs: [image]
  shuffle_buffer: 100
train: {epochs: 2, global_batch: 48, learning_rate: 0.003}
YAML
for layout in "2 1" "2 2"; do
  read -r processes local <<<"$layout"
  total=$((processes * local))
  out=$("${mpi[@]}" -np "$processes" "$tool" --config "$work/fm.yaml" --devices "$local" \
        --checkpoint-dir "$work/tf_mpi$total" 2>&1) || {
    echo "FAIL: TFRecord mpirun -np $processes: $out"; failures=$((failures + 1)); continue; }
  "$tool" --config "$work/fm.yaml" --devices "$total" --checkpoint-dir "$work/tf_one$total" >/dev/null 2>&1 ||
    { echo "FAIL: TFRecord 1 process x $total"; failures=$((failures + 1)); continue; }
  same_file "$work/tf_mpi$total/checkpoint.safetensors" "$work/tf_one$total/checkpoint.safetensors" \
    "TFRecord: $processes processes x $local replicas differ from 1 process x $total replicas"
done
if cmp -s "$work/tf_mpi2/checkpoint.safetensors" "$work/tf_mpi4/checkpoint.safetensors"; then
  echo "FAIL: TFRecord: 2 and 4 replicas wrote identical checkpoints: the comparison proves nothing"
  failures=$((failures + 1))
fi

# Resume: both ranks read rank 0's checkpoint and continue in step.
"${mpi[@]}" -np 2 "$tool" "${small[@]}" --global-batch 48 --epochs 1 --devices 1 \
  --checkpoint-dir "$work/resumed" >/dev/null 2>&1
out=$("${mpi[@]}" -np 2 "$tool" "${small[@]}" --global-batch 48 --epochs 2 --devices 1 \
      --checkpoint-dir "$work/resumed" --resume 2>&1)
grep -q "resumed from .* after epoch 1" <<<"$out" || { echo "FAIL: resume: $out"; failures=$((failures + 1)); }
same_file "$work/resumed/checkpoint.safetensors" "$work/mpi2/checkpoint.safetensors" \
  "a resumed 2-process run differs from the uninterrupted one"

# Failures: run long, then kill (-9) or stop (-STOP) rank 1.
rank_pid() {  # the PID of rank $1 of the job whose command line has $work
  local pid
  for pid in $(pgrep -f "accel_train.*$work/long"); do
    if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1"; then
      echo "$pid"; return; fi
  done
}
fault() {  # fault SIGNAL EXPECTED_REGEX
  local log="$work/fault.log" pid="" waited=0 status
  "${mpi[@]}" -np 2 "$tool" "${small[@]}" --global-batch 32 --epochs 100000 --devices 1 \
    --mpi-timeout 2 --checkpoint-dir "$work/long" >"$log" 2>&1 &
  local job=$!
  jobs_started+=("$job")
  while [[ -z $pid && $waited -lt 300 ]]; do
    grep -q "^Epoch 2/" "$log" && pid=$(rank_pid 1)
    sleep 0.1; waited=$((waited + 1))
  done
  [[ -n $pid ]] || { echo "FAIL: $1: rank 1 never started"; failures=$((failures + 1)); return; }
  kill "-$1" "$pid"
  local start=$SECONDS
  # Bounded: the timeout (2 s), the liveness check (2 s) and mpirun's teardown.
  while kill -0 "$job" 2>/dev/null && ((SECONDS - start < 60)); do sleep 0.2; done
  if kill -0 "$job" 2>/dev/null; then
    echo "FAIL: $1 on rank 1: the job still runs after 60 s"; failures=$((failures + 1)); return; fi
  wait "$job"; status=$?
  if [[ $status -ne 0 ]] && grep -qE -- "$2" "$log"; then
    passes=$((passes + 1)); echo "$1 on rank 1: exit $status after $((SECONDS - start)) s"
  else
    echo "FAIL: $1 on rank 1: exit $status, log:"; tail -20 "$log" | sed 's/^/    /'; failures=$((failures + 1))
  fi
  if [[ -n $(rank_pid 0)$(rank_pid 1) ]]; then echo "FAIL: $1: ranks left running"; failures=$((failures + 1)); fi
}
fault KILL "process rank 1 .* exited on signal 9"
fault STOP "rank 0: timeout: mpi: rank\(s\) 1 stopped responding"

# Bad input ends the whole job with the field named.
binary=$tool
tool_under_mpi() { "${mpi[@]}" -np 2 "$binary" "$@"; }
tool=tool_under_mpi
expect 2 "global_batch 30 does not divide evenly over 4 replicas" "${small[@]}" --global-batch 30 --devices 2
expect 2 "mpi.timeout_s: must be in \(0, 604800\], got 0" "${small[@]}" --mpi-timeout 0
uneven=$("${mpi[@]}" -np 1 "$binary" "${small[@]}" --global-batch 48 --devices 1 : \
         -np 1 "$binary" "${small[@]}" --global-batch 48 --devices 2 2>&1)
if [[ $? -ne 0 ]] && grep -q "process 1 runs 2 replica(s), process 0 runs 1" <<<"$uneven"; then
  passes=$((passes + 1)); else echo "FAIL: uneven replicas: $uneven"; failures=$((failures + 1)); fi

# Ranks started with different settings: refused before step 0, naming the
# setting and the rank.
for setting in "train.global_batch --global-batch 64" "train.seed --seed 7" "model.hidden --hidden 16" \
               "train.learning_rate --learning-rate 0.01" "train.epochs --epochs 3"; do
  read -r name flag value <<<"$setting"
  differ=$("${mpi[@]}" -np 1 "$binary" "${small[@]}" : -np 1 "$binary" "${small[@]}" "$flag" "$value" 2>&1)
  if [[ $? -ne 0 ]] && grep -q "different settings: $name differs from rank 0's on rank(s) 1" <<<"$differ"; then
    passes=$((passes + 1)); else echo "FAIL: ranks differing in $name: $differ"; failures=$((failures + 1)); fi
done

echo "$passes passed, $failures failed"
[[ $failures -eq 0 ]]
