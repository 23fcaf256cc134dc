#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The tests: install what is missing (the tests' own packages too), build,
# and run every test except the `slow` label (run those with:
# ctest --test-dir build -L slow); then the
# checked build (scripts/sanitize): the unit and emu tests again under
# AddressSanitizer and UndefinedBehaviorSanitizer, and the fuzz targets.
# Extra arguments go to the first ctest.
set -euo pipefail
root=$(cd "$(dirname "$0")" && pwd)
"$root/scripts/install-deps" test
"$root/scripts/build"
ctest --test-dir "$root/build" -LE slow --output-on-failure -j "$(nproc)" "$@"
"$root/scripts/sanitize"
