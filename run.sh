#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job: install what it needs if missing, build accel_train (and
# only that: the tests, simulators and benchmarks are ./test.sh's), and
# train an MLP on Fashion-MNIST on the simulated 128x128 accelerator
# (sw_emu), one replica per core, to ~88.4% test accuracy. Extra arguments
# override the config (for example: ./run.sh --epochs 3 --devices 4).
set -euo pipefail
root=$(cd "$(dirname "$0")" && pwd)
"$root/scripts/build" --main
exec "$root/build/tools/accel_train/accel_train" --config "$root/configs/fashion_mnist.yaml" "$@"
