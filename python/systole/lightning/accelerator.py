# SPDX-License-Identifier: Apache-2.0
"""The array as a Lightning accelerator: one replica per process, its
tensors in host memory (torch's CPU device), its products on the array."""

import torch
from pytorch_lightning.accelerators import Accelerator

from systole.torch.debug import metrics
from systole.torch.distributed import xla_multiprocessing


def _replicas(devices):
    """The replica count Trainer(devices=...) asks for: a count, a list of
    array units (one replica each), a string of either, or "auto"."""
    original = devices
    if isinstance(devices, str):
        text = devices.strip()
        if text == "auto":
            return xla_multiprocessing.replica_count()
        try:
            devices = [int(t) for t in text.split(",") if t.strip()] if "," in text else int(text)
        except ValueError:
            raise ValueError(f"Trainer(accelerator='systole', devices={original!r}): expected 'auto', a count or a "
                             "list of unit indices") from None
    if isinstance(devices, bool):
        raise TypeError(f"Trainer(accelerator='systole', devices={original!r}): expected 'auto', a count or a list "
                        "of unit indices")
    if isinstance(devices, int):
        if devices < 1:
            raise ValueError(f"Trainer(accelerator='systole', devices={original!r}): a count must be at least 1")
        return devices
    if isinstance(devices, (list, tuple)):
        if not devices or not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in devices):
            raise ValueError(f"Trainer(accelerator='systole', devices={original!r}): expected a non-empty list of "
                             "unit indices >= 0")
        if len(set(devices)) != len(devices):
            raise ValueError(f"Trainer(accelerator='systole', devices={original!r}): an index is listed twice")
        return len(devices)
    raise TypeError(f"Trainer(accelerator='systole', devices={original!r}): expected 'auto', a count or a list of "
                    "unit indices")


class SystoleAccelerator(Accelerator):
    """accelerator="systole"."""

    def setup_device(self, device):
        if device.type != "cpu":
            raise ValueError(f"SystoleAccelerator: a replica's tensors stay in host memory (cpu), got {device}")

    def get_device_stats(self, device):
        """The array's counters (torch_xla.debug.metrics's)."""
        return {name: metrics.counter_value(name) for name in metrics.counter_names()}

    def teardown(self):
        pass

    @staticmethod
    def parse_devices(devices):
        return _replicas(devices)

    @staticmethod
    def get_parallel_devices(devices):
        return [torch.device("cpu")] * _replicas(devices)

    @staticmethod
    def auto_device_count():
        return xla_multiprocessing.replica_count()

    @staticmethod
    def is_available():
        return True

    @classmethod
    def register_accelerators(cls, accelerator_registry):
        accelerator_registry.register("systole", cls, description="the Systole array (systole.lightning)")
