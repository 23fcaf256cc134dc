#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The tests: install what is missing, build, and run every test except the
# `slow` label (run those with: ctest --test-dir build -L slow).
set -euo pipefail
root=$(cd "$(dirname "$0")" && pwd)
"$root/scripts/build"
exec ctest --test-dir "$root/build" -LE slow --output-on-failure -j "$(nproc)" "$@"
