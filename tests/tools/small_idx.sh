# SPDX-License-Identifier: Apache-2.0
# Sourced by the accel_train tests that train on small synthetic IDX data:
# a temporary $work (removed on exit) holding $work/data (make_idx: 640
# training and 160 test examples), expect(), and $small, the flags of a
# quick run on it. Needs $make_idx.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/data" && "$make_idx" "$work/data" 640 160 || exit 1

source "$(dirname "${BASH_SOURCE[0]}")/expect.sh"

small=(--data-dir "$work/data" --validation-examples 64 --global-batch 32 --array 16x16
       --devices 2 --hidden 32 --learning-rate 0.003)
