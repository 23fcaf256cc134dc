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
cd "$prefix"
PYTHONPATH=$site "$python" - "$version" "$site" <<'PY'
import sys
import numpy as np
import systole
assert systole.__file__.startswith(sys.argv[2]), f"imported {systole.__file__}, not the installed copy"
assert systole.__version__ == sys.argv[1], f"version {systole.__version__}, the package is {sys.argv[1]}"
a = np.arange(12, dtype=np.float32).reshape(3, 4)
c = systole.matmul(a, a.T)
assert np.array_equal(c, a @ a.T), c  # small integers: exact in bf16
import systole.torch.core.xla_model as xm
assert xm.xrt_world_size() == 1
print(f"PASS: systole {systole.__version__} imported from {systole.__file__}")
PY
