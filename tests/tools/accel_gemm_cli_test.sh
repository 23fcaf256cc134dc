#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# accel_gemm end to end (label emu): a run that verifies, .npy round trip,
# and bad input that must end with exit code 2 and a message naming it.
set -u
tool=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

source "$(dirname "$0")/expect.sh"

common=(--array 8x8 --repeat 1)
expect 0 "bit-exact against the HLS kernel" "${common[@]}" --m 37 --n 19 --k 70 --bias --relu --units 3
expect 0 "wrote" "${common[@]}" --m 5 --n 7 --k 3 --out "$work/a.npy"
expect 0 "wrote" "${common[@]}" --m 7 --n 4 --k 2 --out "$work/b.npy"
expect 0 "C\[5x4\] = A\[5x7\] \* B\[7x4\]" "${common[@]}" --a "$work/a.npy" --b "$work/b.npy"
ls "$work"/*.tmp* >/dev/null 2>&1 && { echo "FAIL: a temporary file was left behind"; failures=$((failures + 1)); }

head -c 100 "$work/a.npy" >"$work/truncated.npy"
printf 'not a numpy file at all' >"$work/garbage.npy"
expect 2 "truncated" "${common[@]}" --a "$work/truncated.npy" --b "$work/b.npy"
expect 2 "--a: .*garbage.npy is not a float32 .npy" "${common[@]}" --a "$work/garbage.npy" --b "$work/b.npy"
expect 2 "--b: cannot open" "${common[@]}" --a "$work/a.npy" --b "$work/missing.npy"
expect 2 "threads_per_unit must be 0 \(cores / units\) to 256, got 100000" --m 8 --n 8 --k 8 --array 8x8 --threads 100000
expect 2 "A's columns must equal B's rows" "${common[@]}" --a "$work/a.npy" --b "$work/a.npy"
expect 2 "--a and --b go together" "${common[@]}" --a "$work/a.npy"
expect 2 "--array: expected ROWSxCOLS" --array 8by8
expect 2 "sw_emu has no 5x5 array" --array 5x5 --m 4 --n 4 --k 4
expect 2 "unknown backend 'fpga'" --backend fpga --m 4 --n 4 --k 4
expect 2 "--engine: expected fast or hls" --engine slow
expect 2 "bf16 output needs K <= max_k" "${common[@]}" --m 4 --n 4 --k 100 --bf16-out
expect 2 "no free block" "${common[@]}" --m 300000 --n 1 --k 1000
expect 2 "--units: Value 0 not in range" --units 0
[[ -e "$work/out.npy" ]] && { echo "FAIL: out.npy exists before any run"; failures=$((failures + 1)); }
expect 2 "c.npy: cannot create" "${common[@]}" --m 2 --n 2 --k 2 --out "$work/no/such/dir/c.npy"

# Every integer flag at the edges of the number types: -1, 2^32, 2^64, a
# fraction and a word are refused with exit 2, the flag and the text named,
# never wrapped or cut short.
for flag in --m --n --k --units --threads --seed --baud --repeat; do
  args=(--array 8x8)
  for other in --m --n --k; do [[ $other == "$flag" ]] || args+=("$other" 4); done
  [[ $flag == --repeat ]] || args+=(--repeat 1)
  for value in -1 4294967296 18446744073709551616 1.5 x; do
    expect 2 "$flag.*$value|$value.*$flag" "${args[@]}" "$flag" "$value"
  done
done

echo "$passes passed, $failures failed"
[[ $failures -eq 0 ]]
