#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the project's wheel as pip does (pyproject.toml, scikit-build-core
# from .venv), installs it into a fresh virtual environment and uses it
# there with no PYTHONPATH: installed_package_check.py, the startup module
# the wheel's .pth imports, and Lightning's Trainer on accelerator "systole".
# The wheel has the sw_emu backend alone, to build in a few minutes; the
# others are CMake options like any other (pyproject.toml builds them all).
# Usage: wheel_test.sh SOURCE_DIR VENV_PYTHON VERSION
set -euo pipefail
source=$1 venv_python=$2 version=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

settings=(build-dir="$work/build" cmake.define.SYSTOLE_HW_EMU=OFF cmake.define.SYSTOLE_PERF=OFF
          cmake.define.SYSTOLE_XRT=OFF cmake.define.SYSTOLE_WITH_MPI=OFF)
if ! "$venv_python" -m pip wheel --quiet --disable-pip-version-check --no-build-isolation --no-deps \
       -w "$work/dist" "${settings[@]/#/--config-settings=}" "$source" >"$work/pip.log" 2>&1; then
  tail -n 40 "$work/pip.log"
  echo "FAIL: pip wheel"
  exit 1
fi
wheel=$(echo "$work"/dist/systole-"$version"-*.whl)
[[ -f $wheel ]] || { echo "FAIL: no wheel systole-$version-*.whl in $(ls "$work/dist")"; exit 1; }

# The package and nothing else: no headers, static libraries or tools.
"$venv_python" - "$wheel" <<'PY'
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
allowed = ("systole/", "systole-", "systole_startup.py")
stray = [n for n in names if not n.startswith(allowed)]
assert not stray, f"the wheel holds more than the package: {stray[:10]}"
for needed in ("systole/__init__.py", "systole/torch/core/xla_model.py", "systole/lightning/accelerator.py",
               "systole_startup.py", "systole-startup.pth"):
    assert needed in names, f"the wheel has no {needed}"
assert any(n.startswith("systole/_systole") and n.endswith(".so") for n in names), "the wheel has no extension"
PY

# A fresh environment as a user makes one (Debian's interpreter, its torch
# and NumPy visible), which also sees .venv's pinned packages (Lightning)
# through a path line: .venv's own .pth files do not run there.
/usr/bin/python3 -m venv --system-site-packages "$work/env"
env_site=$("$work/env/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
"$venv_python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))' >"$env_site/project-venv.pth"
"$work/env/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --no-index "$wheel"

checks=$(cd "$(dirname "$0")" && pwd)/installed_package_check.py
cd "$work"
env -u PYTHONPATH "$work/env/bin/python" "$checks" "$env_site" "$version"
env -u PYTHONPATH "$work/env/bin/python" - "$env_site" <<'PY'
import sys
site = sys.argv[1]
assert "systole_startup" in sys.modules, "the wheel's systole-startup.pth did not run"
import systole
import torch
import pytorch_lightning as pl
import systole.torch.debug.metrics as met
from systole.lightning import SystoleAccelerator


class Tiny(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(8, 3)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.cross_entropy(self.layer(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


torch.manual_seed(0)
data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randint(0, 3, (64,)))
trainer = pl.Trainer(accelerator="systole", devices=1, max_epochs=1, logger=False, enable_checkpointing=False,
                     enable_progress_bar=False, enable_model_summary=False)
trainer.fit(Tiny(), torch.utils.data.DataLoader(data, batch_size=16))
assert isinstance(trainer.accelerator, SystoleAccelerator), trainer.accelerator
assert trainer.global_step == 4, trainer.global_step
products = met.counter_value("ArrayProducts")
assert products == 8, f"{products} products on the array: 4 steps of a linear layer make 8 (forward, dW)"
print(f"PASS: the wheel systole {systole.__version__} installed in {site}; Lightning's 4 steps made "
      f"{products} products on the array")
PY
