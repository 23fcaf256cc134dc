#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Bring-up on an iCEBreaker: builds the bitstream if it is missing, flashes
# it with iceprog, then multiplies a small GEMM on the board through the
# uart backend, checks it bit for bit against the HLS kernel at the board's
# array size, and prints the kernel's counters.
# Usage: hw/fpga/ice40/bringup.sh [PORT]
#   PORT  the FTDI chip's second channel, the board's UART (default /dev/ttyUSB1;
#         the first, /dev/ttyUSB0, is the flash's SPI)
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
port=${1:-/dev/ttyUSB1}
bin=$root/bitstreams/icebreaker/systole.bin
gemm=$root/build/tools/accel_gemm
cd "$root"
[[ -f $bin ]] || make -f Makefile.fpga BOARD=icebreaker
[[ -x $gemm ]] || scripts/build --target accel_gemm
command -v iceprog >/dev/null || { echo "bringup.sh: iceprog not found (scripts/install-deps installs fpga-icestorm)" >&2; exit 1; }
echo "flashing $bin"
iceprog "$bin"
sleep 1  # the FPGA configures itself from the flash
# A self-test GEMM of awkward sizes with every output step: ~10 s on the link.
"$gemm" --backend uart --device "$port" --m 19 --n 7 --k 33 --bias --relu --verify full --seed 1
echo "bringup.sh: the board answers and computes as the HLS kernel does"
