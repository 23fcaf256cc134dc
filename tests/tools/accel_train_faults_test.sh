#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The fault matrix's process and disk rows (label emu), each ending within a
# bounded time with a named error and nothing lost:
#   SIGINT and SIGTERM stop training after a step, keep the last checkpoint
#     and exit 128+N; --resume continues;
#   SIGKILL at named fault points (mid-epoch, and at each step of writing
#     a checkpoint), resumed each time, ends with the same checkpoint bytes
#     as an uninterrupted run, and the next run removes what a killed write
#     left;
#   a full disk (ENOSPC) while writing a checkpoint or accel_gemm --out, and
#     a read-only checkpoint directory: exit 2 naming the file, the previous
#     file intact.
# The disk rows mount a small tmpfs in a private mount namespace (unshare).
set -u
tool=$1 make_idx=$2 accel_gemm=$3
source "$(dirname "$0")/small_idx.sh"
# env execs the tool (same pid, for kill) with SIGINT and SIGTERM at their
# defaults (a background job of a script starts with SIGINT ignored).
run=(env --default-signal=INT,TERM "$tool" "${small[@]}")
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
loads() {  # the checkpoint $1 loads and evaluates
  "$tool" evaluate --checkpoint "$1" --data-dir "$work/data" --array 16x16 >/dev/null 2>&1
}

# SIGINT and SIGTERM: stop after the step in progress.
for signal in INT TERM; do
  dir="$work/signal-$signal"
  "${run[@]}" --epochs 200 --checkpoint-dir "$dir" >"$work/out" 2>"$work/err" &
  pid=$!
  for _ in $(seq 600); do [[ -f $dir/checkpoint.safetensors ]] && break; sleep 0.05; done
  cp "$dir/checkpoint.safetensors" "$work/before" 2>/dev/null
  sleep 0.3
  kill -s "$signal" "$pid"
  wait "$pid"
  status=$?
  want=$((128 + $(kill -l "$signal")))
  if [[ $status -ne $want ]] || ! grep -qE "(interrupted \(SIGINT\)|terminated \(SIGTERM\)): stopped after batch [0-9]+ of 18 in epoch [0-9]+ .*the last checkpoint, .*checkpoint.safetensors after epoch [0-9]+, is intact; --resume continues from it" "$work/err"; then
    fail "SIG$signal: exit $status (want $want):"; sed 's/^/    /' "$work/err"
  else
    passes=$((passes + 1))
  fi
  loads "$dir/checkpoint.safetensors" || fail "SIG$signal: the checkpoint does not load"
  # It stopped before the next epoch's checkpoint or kept the one it had.
  epochs=$(grep -oE "after epoch [0-9]+" "$work/err" | grep -oE "[0-9]+$")
  expect 0 "resumed from .* after epoch $epochs" "${small[@]}" --epochs $((epochs + 1)) --checkpoint-dir "$dir" --resume
done

# SIGKILL at named points (the trainer's fault points, SYSTOLE_FAULTS),
# each run resumed from what the last left: the same bytes as no kill at
# all. The points fall mid-epoch and at each step of writing a checkpoint
# (its bytes written but not synced, synced but not renamed, renamed with
# the model file not yet written), whatever the machine's load.
epochs=6
large=(--hidden 512,256 --epochs $epochs)
"$tool" "${small[@]}" "${large[@]}" --checkpoint-dir "$work/whole" >/dev/null || fail "the uninterrupted run"
dir="$work/killed"
# point | the epoch of the checkpoint the next run resumes from (0: none) |
# whether the kill leaves a temporary file for the next run to remove
kill_points=(
  "train.step@7                             0 no"
  "output.fsync:checkpoint.safetensors      0 yes"
  "output.rename:checkpoint.safetensors     0 yes"
  "output.renamed:checkpoint.safetensors    1 no"
  "output.rename:model.safetensors          2 yes"
  "train.step@20                            3 no"
  "output.fsync:checkpoint.safetensors@2    4 yes"
)
left_temporary=no resumed=0
# What the previous kill left, as the run after it reports it.
check_left() {
  if [[ $left_temporary == yes ]] && ! grep -q "removed .*\.tmp\.[0-9]*\.[0-9]*, a partial write" "$work/out"; then
    fail "the run after a kill mid-write did not remove its temporary file:"; sed 's/^/    /' "$work/out"
  fi
  if ((resumed > 0)) && ! grep -q "resumed from .* after epoch $resumed$" "$work/out"; then
    fail "the run after a kill did not resume after epoch $resumed:"; sed 's/^/    /' "$work/out"
  fi
}
for row in "${kill_points[@]}"; do
  read -r point resumes temporary <<<"$row"
  resume=()
  [[ -f $dir/checkpoint.safetensors ]] && resume=(--resume)
  SYSTOLE_FAULTS="$point=kill" "${run[@]}" "${large[@]}" --checkpoint-dir "$dir" "${resume[@]}" >"$work/out" 2>&1
  status=$?
  [[ $status -eq 137 ]] || { fail "killed at $point: exit $status, not 137 (SIGKILL):"; sed 's/^/    /' "$work/out"; }
  check_left
  if ((resumes == 0)); then
    [[ -f $dir/checkpoint.safetensors ]] && fail "killed at $point: a checkpoint appeared"
  else
    loads "$dir/checkpoint.safetensors" || fail "killed at $point: the checkpoint does not load"
  fi
  ls "$dir" | grep -q '\.tmp\.' && [[ $temporary == no ]] && fail "killed at $point: an unexpected temporary file"
  ls "$dir" | grep -q '\.tmp\.' || [[ $temporary == no ]] || fail "killed at $point: no temporary file (the point was not reached mid-write)"
  left_temporary=$temporary resumed=$resumes
  passes=$((passes + 1))
done
"${run[@]}" "${large[@]}" --checkpoint-dir "$dir" --resume >"$work/out" 2>&1 || { fail "the last run:"; sed 's/^/    /' "$work/out"; }
check_left
cmp -s "$work/whole/checkpoint.safetensors" "$dir/checkpoint.safetensors" && passes=$((passes + 1)) ||
  fail "killed at ${#kill_points[@]} points and resumed, the final checkpoint differs from the uninterrupted run's"
cmp -s "$work/whole/model.safetensors" "$dir/model.safetensors" && passes=$((passes + 1)) ||
  fail "killed and resumed, the final model file differs from the uninterrupted run's"

# A misspelt rule is refused before anything runs.
SYSTOLE_FAULTS="train.stpe@3=kill" expect 2 "^accel_train: SYSTOLE_FAULTS: 'train.stpe@3=kill': no fault point 'train.stpe'" \
  "${small[@]}" --epochs 1

# What a write killed mid-way leaves is removed by the next run on the directory.
printf 'half a checkpoint' >"$dir/checkpoint.safetensors.tmp.99999.0"
expect 0 "removed .*checkpoint.safetensors.tmp.99999.0, a partial write of a run that was killed" \
  "${small[@]}" --hidden 512,256 --epochs $((epochs + 1)) --checkpoint-dir "$dir" --resume
[[ -e $dir/checkpoint.safetensors.tmp.99999.0 ]] && fail "the partial write is still there"

# A full disk and a read-only directory, on a tmpfs of our own.
bytes=$(stat -c %s "$work/signal-INT/checkpoint.safetensors")  # the small model's
mkdir -p "$work/small_disk"
unshare -rm bash -s "$tool" "$accel_gemm" "$work" "$bytes" "${small[*]}" >"$work/disk.log" 2>&1 <<'DISK'
tool=$1 accel_gemm=$2 work=$3 bytes=$4
read -ra small <<<"$5"
disk=$work/small_disk
# Room for one checkpoint and half of another: the second write runs out.
mount -t tmpfs -o size=$((bytes * 3 / 2 / 4096 * 4096 + 4096)) tmpfs "$disk" || exit 9
"$tool" "${small[@]}" --epochs 1 --checkpoint-dir "$disk/run" >/dev/null || { echo "FAIL: epoch 1 on the small disk"; exit 1; }
cp "$disk/run/checkpoint.safetensors" "$work/first"
"$tool" "${small[@]}" --epochs 2 --checkpoint-dir "$disk/run" --resume 2>"$work/err"
echo "ENOSPC exit $?"
cat "$work/err"
cmp -s "$work/first" "$disk/run/checkpoint.safetensors" && echo "ENOSPC: previous checkpoint intact"
ls "$disk/run" | grep -q tmp && echo "FAIL: a temporary file is left"
# accel_gemm --out: the previous output stays when the new one does not fit.
rm -rf "$disk/run"
"$accel_gemm" --m 8 --n 8 --k 8 --array 8x8 --out "$disk/c.npy" >/dev/null || echo "FAIL: the small --out"
cp "$disk/c.npy" "$work/c_before.npy"
"$accel_gemm" --m 512 --n 512 --k 8 --array 8x8 --out "$disk/c.npy" 2>"$work/err" >/dev/null
echo "gemm ENOSPC exit $?"
cat "$work/err"
cmp -s "$work/c_before.npy" "$disk/c.npy" && echo "gemm: previous output intact"
# Read-only: refused at the start, naming the directory's lock file.
"$tool" "${small[@]}" --epochs 1 --checkpoint-dir "$disk/ro" >/dev/null || echo "FAIL: epoch 1 before read-only"
cp "$disk/ro/checkpoint.safetensors" "$work/ro_before"
mount -o remount,ro,bind "$disk" "$disk" || exit 9
"$tool" "${small[@]}" --epochs 2 --checkpoint-dir "$disk/ro" --resume 2>"$work/err" >/dev/null
echo "read-only exit $?"
cat "$work/err"
cmp -s "$work/ro_before" "$disk/ro/checkpoint.safetensors" && echo "read-only: checkpoint intact"
DISK
log=$(cat "$work/disk.log")
for want in "ENOSPC exit 2" "small_disk/run/checkpoint.safetensors.*No space left on device" \
            "ENOSPC: previous checkpoint intact" "gemm ENOSPC exit 2" "--out: .*c.npy.*No space left on device" \
            "gemm: previous output intact" "read-only exit 2" "small_disk/ro/.lock: cannot open \(Read-only file system\)" \
            "read-only: checkpoint intact"; do
  grep -qE -- "$want" <<<"$log" && passes=$((passes + 1)) || fail "disk rows: no line matching '$want' in:"$'\n'"$log"
done
grep -q FAIL <<<"$log" && fail "disk rows: $log"

echo "$passes passed, $failures failed"
[[ $failures -eq 0 ]]
