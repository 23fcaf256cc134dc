# SPDX-License-Identifier: Apache-2.0
"""Lightning's Trainer on the array: lightning_job.py's LightningModule (as
Lightning's documentation writes one, no Systole call in it) trained with
accelerator="systole" on devices=2, [1] and "auto": every product on the
array, two runs the same to the bit, plain Lightning-on-CPU's accuracy for
the same devices; and what Trainer(devices=...) may say."""

import os
import re
import subprocess
import sys
import tempfile
import unittest

import pytorch_lightning as pl
import torch

import systole.lightning  # noqa: F401
from systole.lightning import SystoleAccelerator, SystoleStrategy

HERE = os.path.dirname(os.path.abspath(__file__))


def fit(tmp, accelerator, devices, name, env=None):
    out = os.path.join(tmp, name, "model.pt")
    os.makedirs(os.path.dirname(out))
    result = subprocess.run([sys.executable, os.path.join(HERE, "lightning_job.py"), "--accelerator", accelerator,
                             "--devices", devices, "--out", out], capture_output=True, text=True, timeout=600,
                            env={**os.environ, **(env or {})})
    if result.returncode != 0:
        raise AssertionError(f"lightning_job.py {accelerator} {devices} exited {result.returncode}:\n"
                             f"{result.stderr[-3000:]}")
    found = re.search(r"val_acc ([0-9.]+)\nworld (\d+)\nproducts (\d+)\n", result.stdout)
    return float(found.group(1)), int(found.group(2)), int(found.group(3)), torch.load(out)


class LightningTest(unittest.TestCase):

    def test_two_replicas_train_reproducibly_at_plain_lightnings_accuracy(self):
        with tempfile.TemporaryDirectory() as tmp:
            first = fit(tmp, "systole", "2", "first")
            second = fit(tmp, "systole", "2", "second")
            plain = fit(tmp, "cpu", "2", "plain")
        print(f"val_acc: systole {first[0]:.4f}, plain Lightning on the CPU {plain[0]:.4f} (devices=2)")
        self.assertEqual(first[1], 2)
        self.assertGreater(first[2], 0)  # products on the array, counted by the device
        self.assertEqual(plain[2], 0)
        self.assertLess(abs(first[0] - plain[0]), 0.01)
        for name in first[3]:
            self.assertTrue(torch.equal(first[3][name], second[3][name]), name)

    def test_a_list_of_one_unit_and_auto(self):
        with tempfile.TemporaryDirectory() as tmp:
            one = fit(tmp, "systole", "[1]", "one")
            plain = fit(tmp, "cpu", "1", "plain")
            auto = fit(tmp, "systole", "auto", "auto", env={"SYSTOLE_NUM_DEVICES": "2"})
        print(f"val_acc: systole {one[0]:.4f}, plain Lightning on the CPU {plain[0]:.4f} (one device)")
        self.assertEqual((one[1], auto[1]), (1, 2))
        self.assertGreater(one[2], 0)
        self.assertLess(abs(one[0] - plain[0]), 0.01)

    def test_the_accelerator_and_its_devices(self):
        trainer = pl.Trainer(accelerator="systole", devices=1, logger=False, enable_progress_bar=False)
        self.assertIsInstance(trainer.accelerator, SystoleAccelerator)
        self.assertIsInstance(trainer.strategy, SystoleStrategy)
        self.assertEqual(SystoleAccelerator.parse_devices([0, 3]), 2)
        self.assertEqual(SystoleAccelerator.parse_devices("3"), 3)
        for error, pattern, devices in [(ValueError, "a count must be at least 1", 0),
                                        (ValueError, "an index is listed twice", [1, 1]),
                                        (ValueError, "expected 'auto', a count or a list", "all"),
                                        (TypeError, "devices=True", True)]:
            with self.subTest(devices=devices):
                with self.assertRaisesRegex(error, pattern):
                    SystoleAccelerator.parse_devices(devices)


if __name__ == "__main__":
    unittest.main()
