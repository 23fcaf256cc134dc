# SPDX-License-Identifier: Apache-2.0
"""What an installed systole package must do wherever it was installed:
import from SITE (not the build tree) at VERSION, multiply exactly on the
array, and give systole.torch. installed_python_test.sh and wheel_test.sh
run it. Usage: installed_package_check.py SITE VERSION"""

import sys

import numpy as np

import systole
import systole.torch.core.xla_model as xm

site, version = sys.argv[1:]
assert systole.__file__.startswith(site), f"imported {systole.__file__}, not the installed copy in {site}"
assert systole.__version__ == version, f"version {systole.__version__}, the package is {version}"
a = np.arange(12, dtype=np.float32).reshape(3, 4)
c = systole.matmul(a, a.T)
assert np.array_equal(c, a @ a.T), c  # small integers: exact in bf16
assert xm.xrt_world_size() == 1
print(f"systole {systole.__version__} imported from {systole.__file__}")
