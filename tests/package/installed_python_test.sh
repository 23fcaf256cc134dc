#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the build into a fresh prefix and imports the Python package from
# there (its dist-packages directory under the prefix), away from the build
# tree: the version, a product on the array, systole.torch.
# Usage: installed_python_test.sh BUILD_DIR PYTHON PYTHON_INSTALL_DIR VERSION
set -euo pipefail
build=$1 python=$2 install_dir=$3 version=$4
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT

cmake --install "$build" --prefix "$prefix/usr" >"$prefix/install.log"
site=$prefix/usr/$install_dir
for file in systole/__init__.py systole/torch/__init__.py systole/torch/core/xla_model.py; do
  [[ -e $site/$file ]] || { echo "FAIL: the install has no $install_dir/$file"; exit 1; }
done
ls "$site"/systole/_systole*.so >/dev/null || { echo "FAIL: the install has no extension module"; exit 1; }
checks=$(cd "$(dirname "$0")" && pwd)/installed_package_check.py
cd "$prefix"
PYTHONPATH=$site "$python" "$checks" "$site" "$version"
echo "PASS: the installed package"
