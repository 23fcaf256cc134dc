#!/usr/bin/env bash
# The main job: install what is missing, build, and run the accelerator.
# Until accel_train lands, this multiplies a GEMM on the simulated 128x128
# accelerator (sw_emu, two compute units), checks it bit for bit against the
# HLS kernel and against fp64, and prints its throughput and counters.
set -euo pipefail
root=$(cd "$(dirname "$0")" && pwd)
"$root/scripts/build"
exec "$root/build/tools/accel_gemm" --m 2048 --n 1024 --k 1000 --bias --relu --units 2 "$@"
