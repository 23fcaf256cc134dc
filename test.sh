#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The tests: install what is missing (the tests' own packages too), build,
# and run every test except the `slow` and `flow` labels (run those with:
# scripts/build --all && ctest --test-dir build -L 'slow|flow');
# then the checked build (scripts/sanitize): the unit and emu tests again under
# AddressSanitizer and UndefinedBehaviorSanitizer, and the fuzz targets.
# Extra arguments go to the first ctest. Ends with its elapsed time.
set -euo pipefail
root=$(cd "$(dirname "$0")" && pwd)
start=$SECONDS
"$root/scripts/install-deps" test
"$root/scripts/build"
ctest --test-dir "$root/build" -LE 'slow|flow' --output-on-failure -j "$(nproc)" "$@"
"$root/scripts/sanitize"
echo "test.sh: passed in $(((SECONDS - start) / 60)) min $(((SECONDS - start) % 60)) s"
