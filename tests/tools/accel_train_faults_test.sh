#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The fault matrix's process and disk rows (label emu), each ending within a
# bounded time with a named error and nothing lost:
#   SIGINT and SIGTERM stop training after a step, keep the last checkpoint
#     and exit 128+N; --resume continues;
#   SIGKILL at random points, resumed each time, ends with the same
#     checkpoint bytes as an uninterrupted run (seed printed), and the next
#     run removes what a killed write left;
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

# SIGKILL at random points, each resumed: the same bytes as no kill at all.
# A larger model, so that checkpoint writes (6 MB) take part of the run.
seed=${SEED:-$RANDOM}
echo "SIGKILL kill points from seed $seed"
RANDOM=$seed
epochs=6
large=(--hidden 512,256 --epochs $epochs)
start=$(date +%s%N)
"$tool" "${small[@]}" "${large[@]}" --checkpoint-dir "$work/whole" >/dev/null || fail "the uninterrupted run"
whole_ms=$((($(date +%s%N) - start) / 1000000))
dir="$work/killed"
kills=0
for attempt in $(seq 30); do
  resume=()
  [[ -f $dir/checkpoint.safetensors ]] && resume=(--resume)
  "${run[@]}" "${large[@]}" --checkpoint-dir "$dir" "${resume[@]}" >"$work/out" 2>&1 &
  pid=$!
  # Within a quarter of the whole run, so that at least three runs are
  # killed before the work is done.
  delay_ms=$((RANDOM % (whole_ms / 4 + 1)))
  sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
  if ((kills < 5)) && kill -KILL "$pid" 2>/dev/null; then
    wait "$pid" 2>/dev/null
    kills=$((kills + 1))
    echo "  run $attempt killed after $delay_ms ms (the whole run takes $whole_ms ms)"
    [[ -f $dir/checkpoint.safetensors ]] && ! loads "$dir/checkpoint.safetensors" &&
      fail "after a SIGKILL at $delay_ms ms the checkpoint does not load"
    continue
  fi
  wait "$pid" || { fail "run $attempt:"; sed 's/^/    /' "$work/out"; }
  ((kills >= 3)) && break
  # The machine was faster than when the whole run was timed: start over.
  echo "  run $attempt finished after $kills kill(s); starting again"
  rm -rf "$dir"
  kills=0
done
((kills >= 3)) || fail "only $kills of the runs were killed (the kill points came too late)"
cmp -s "$work/whole/checkpoint.safetensors" "$dir/checkpoint.safetensors" && passes=$((passes + 1)) ||
  fail "killed and resumed $kills times, the final checkpoint differs from the uninterrupted run's"

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
