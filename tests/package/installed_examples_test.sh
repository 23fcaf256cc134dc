#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the build into a fresh prefix, builds examples/ against it as
# another project would (find_package(Systole), Systole::host and
# Systole::run), and runs the examples. Usage: installed_examples_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 source=$2
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT

cmake --install "$build" --prefix "$prefix/usr" >"$prefix/install.log"
for file in include/systole/driver.h include/systole/trainer.h include/systole/fit.h include/systole/version.h include/systole/spec.h \
            include/systole/loss.h include/systole/optimizer.h include/systole/layer.h include/systole/run/run.h \
            lib/cmake/Systole/SystoleConfig.cmake bin/accel_train; do
  [[ -e $prefix/usr/$file ]] || { echo "FAIL: the install has no $file"; exit 1; }
done
# The package must not point back into this checkout or its build tree.
if grep -rlF -e "$source" -e "$build" "$prefix/usr/lib/cmake"; then
  echo "FAIL: the installed CMake files above name the source or build tree"
  exit 1
fi

# One version: the CMake package's is the tool's.
version=$(sed -n 's/^set(PACKAGE_VERSION "\(.*\)")$/\1/p' "$prefix/usr/lib/cmake/Systole/SystoleConfigVersion.cmake")
tool_version=$("$prefix/usr/bin/accel_train" --version)
[[ -n $version && $tool_version == "accel_train (Systole) $version" ]] ||
  { echo "FAIL: accel_train --version says '$tool_version', the package is '$version'"; exit 1; }

cmake -S "$source/examples" -B "$prefix/examples" -DCMAKE_PREFIX_PATH="$prefix/usr" \
      -DCMAKE_BUILD_TYPE=Release >"$prefix/configure.log"
cmake --build "$prefix/examples" -j "$(nproc)" >"$prefix/build.log" \
  || { cat "$prefix/build.log"; exit 1; }

"$prefix/examples/gemm"
"$prefix/examples/custom_training_loop" | tee "$prefix/loop.log"
grep -q "replicas' parameters identical" "$prefix/loop.log"
"$prefix/examples/fit" | tee "$prefix/fit.log"  # exits 1 unless it learns
grep -q "\[BestAccuracy\] epoch 1: val_accuracy .* (confidence 0\.[0-9]*)" "$prefix/fit.log"
grep -q "torch: torch.nn.Sequential(Scale(20), torch.nn.Linear(20, 64)" "$prefix/fit.log"
# A YAML config through the installed run library: the MLP of run.sh for
# 40 steps on 16x16 arrays, the program's own callback beside the config's.
"$prefix/examples/train_from_config" "$source/configs/fashion_mnist.yaml" \
  "{array: 16x16, data: {validation_examples: 1000, test_examples: 1000}, train: {epochs: 2, steps_per_epoch: 20}}" |
  tee "$prefix/run.log"
grep -q "^\[EpochLine\] epoch 2: loss [0-9.]* after 40 steps$" "$prefix/run.log"
grep -q "^test accuracy 0\.[5-9][0-9]* after 40 steps$" "$prefix/run.log"
# No header of the installed package may reach yaml-cpp (a private dependency).
if grep -rl "yaml-cpp" "$prefix/usr/include/systole"; then
  echo "FAIL: installed headers above include yaml-cpp"; exit 1
fi
echo "PASS: examples built against the installed package and ran"
