# SPDX-License-Identifier: Apache-2.0
"""A LightningModule as Lightning's documentation writes one (training_step,
validation_step with self.log, configure_optimizers, DataLoaders, a
ModelCheckpoint), with no Systole call in it, trained by
Trainer(accelerator=..., devices=...). Lightning runs this script again in
each replica's process, so the import of systole.lightning is at the top.

    python lightning_job.py --accelerator systole --devices 2 --out model.pt

Prints (rank 0) "val_acc X" (the last epoch's validation accuracy,
synchronised over the replicas), the replica count, the products on the
array, the seconds trainer.fit took and the best checkpoint, a line each,
and saves the final state_dict."""

import argparse
import gzip
import os
import time

import numpy as np
import pytorch_lightning as pl
import torch
import torch.nn.functional as F
from pytorch_lightning.callbacks import ModelCheckpoint
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import systole.lightning  # noqa: F401  (registers accelerator="systole")
from systole.torch.debug import metrics

DATA = "/usr/share/datasets/fashion-mnist"


def read(prefix, count):
    with gzip.open(os.path.join(DATA, f"{prefix}-images-idx3-ubyte.gz")) as f:
        x = np.frombuffer(f.read(16 + count * 784), dtype=np.uint8, offset=16).reshape(-1, 784)
    with gzip.open(os.path.join(DATA, f"{prefix}-labels-idx1-ubyte.gz")) as f:
        y = np.frombuffer(f.read(8 + count), dtype=np.uint8, offset=8)
    return TensorDataset(torch.from_numpy(x.astype(np.float32) / 255.0), torch.from_numpy(y.astype(np.int64)))


class LitClassifier(pl.LightningModule):

    def __init__(self, hidden=64, lr=1e-3):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(784, hidden), nn.ReLU(), nn.Linear(hidden, 10))

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        self.log("val_loss", F.cross_entropy(logits, y), sync_dist=True)
        self.log("val_acc", (logits.argmax(1) == y).float().mean(), sync_dist=True)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


def devices(text):
    if text == "auto":
        return text
    if text.startswith("["):
        return [int(i) for i in text.strip("[]").split(",")]
    return int(text)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--accelerator", default="systole")
    parser.add_argument("--devices", type=devices, default="auto")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--train", type=int, default=2048)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    pl.seed_everything(3, workers=True)
    train = DataLoader(read("train", args.train), batch_size=32, shuffle=True)
    val = DataLoader(read("t10k", 1000), batch_size=100)
    model = LitClassifier()
    checkpoint = ModelCheckpoint(dirpath=os.path.dirname(os.path.abspath(args.out)), monitor="val_acc", mode="max")
    trainer = pl.Trainer(accelerator=args.accelerator, devices=args.devices, max_epochs=args.epochs,
                         callbacks=[checkpoint], logger=False, enable_progress_bar=False, enable_model_summary=False,
                         deterministic=True)
    start = time.perf_counter()
    trainer.fit(model, train, val)
    seconds = time.perf_counter() - start
    if trainer.is_global_zero:
        torch.save(model.state_dict(), args.out)
        print(f"val_acc {trainer.callback_metrics['val_acc'].item():.4f}\nworld {trainer.world_size}\n"
              f"products {metrics.counter_value('ArrayProducts')}\nfit_seconds {seconds:.2f}\n"
              f"checkpoint {os.path.basename(checkpoint.best_model_path)}")


if __name__ == "__main__":
    main()
