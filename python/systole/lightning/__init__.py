# SPDX-License-Identifier: Apache-2.0
"""Lightning's Trainer on the array (pytorch-lightning 2.2):

    import pytorch_lightning as pl
    import systole.lightning  # registers accelerator="systole"

    trainer = pl.Trainer(accelerator="systole", devices=8)  # or [1], "auto"
    trainer.fit(model, train_loader, val_loader)

The LightningModule needs no Systole call. Each replica is a process, as
Lightning's DDP runs one per device (Lightning starts the others by running
the script again, so this import must be at the script's top level); inside
training_step, validation_step, test_step and predict_step every float32
linear layer, convolution and matrix product runs on the array, forward and
backward; gradients are averaged in replica order with the bits of
systole.torch's xm.optimizer_step, and self.log(..., sync_dist=True) sums
in replica order too. devices="auto" is SYSTOLE_NUM_DEVICES or one per core.

Lightning 2.2 picks a strategy for an accelerator only among its own, so
importing this module also teaches its accelerator connector that
accelerator="systole" comes with strategy="systole".
"""

import systole_startup  # noqa: F401  (Debian's torch 1.13 under Python 3.11: see its docstring)

from systole.lightning.accelerator import SystoleAccelerator
from systole.lightning.strategy import SystoleStrategy, register

__all__ = ["SystoleAccelerator", "SystoleStrategy"]

register()
