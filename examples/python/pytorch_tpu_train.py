# SPDX-License-Identifier: Apache-2.0
"""The Vertex AI guide's torch_xla training script, on the simulated array.

Below the line marked "the guide's script" is that script as the guide
writes it for a TPU (an MLP, Adam, one process per TPU core, 8 replicas,
the master saving the weights under `if xm.is_master_ordinal():`). Its
changes, all of them:
- its three torch_xla imports name systole.torch instead;
- its input is Fashion-MNIST, so the first layer takes 784 inputs instead
  of the guide's 512;
- the guide leaves create_dataset to the reader: it is defined here;
- the number of processes, of epochs and the file name come from the
  environment below, and the master prints the loss of each epoch and a
  test-set accuracy the guide does not have.

    .venv/bin/python examples/python/pytorch_tpu_train.py   # after pip install (docs/python.md)

Inside xmp.spawn every float32 product runs on the array. Every process is
seeded alike by spawn, so two runs end with the same state_dict, bit for
bit. SYSTOLE_ARRAY=off leaves every product to PyTorch (the same script in
plain PyTorch, for comparison); SYSTOLE_EPOCHS and SYSTOLE_PROCS shorten a
run; SYSTOLE_OUT names the state_dict file (model.pt).
"""

import gzip
import os

import numpy as np
import torch

DATA = "/usr/share/datasets/fashion-mnist"  # Debian's dataset-fashion-mnist
EPOCHS = int(os.environ.get("SYSTOLE_EPOCHS", "10"))
PROCS = int(os.environ.get("SYSTOLE_PROCS", "8"))
OUT = os.environ.get("SYSTOLE_OUT", "model.pt")


def read_idx(name, offset):
    with gzip.open(os.path.join(DATA, name)) as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)


def create_dataset(train=True):
    """Fashion-MNIST as flat float32 images in [0, 1] and int64 labels."""
    prefix = "train" if train else "t10k"
    images = read_idx(f"{prefix}-images-idx3-ubyte.gz", 16).reshape(-1, 784).astype(np.float32) / 255.0
    labels = read_idx(f"{prefix}-labels-idx1-ubyte.gz", 8).astype(np.int64)
    return torch.utils.data.TensorDataset(torch.from_numpy(images), torch.from_numpy(labels))


def test_accuracy(model):
    data = create_dataset(train=False)
    with torch.no_grad():
        logits = model(data.tensors[0])
    return (logits.argmax(1) == data.tensors[1]).float().mean().item()


# ---- the guide's script ------------------------------------------------------
import torch.nn as nn  # noqa: E402
import torch.optim as optim  # noqa: E402
import systole.torch.core.xla_model as xm  # noqa: E402  (was torch_xla.core.xla_model)
import systole.torch.distributed.parallel_loader as pl  # noqa: E402  (torch_xla.distributed.parallel_loader)
import systole.torch.distributed.xla_multiprocessing as xmp  # noqa: E402  (torch_xla.distributed.xla_multiprocessing)


def train_fn(index):
    device = xm.xla_device()
    model = nn.Sequential(
        nn.Linear(784, 1024), nn.ReLU(),
        nn.Linear(1024, 512), nn.ReLU(),
        nn.Linear(512, 10)).to(device)
    optimizer = optim.Adam(model.parameters(), lr=0.001)
    loss_fn = nn.CrossEntropyLoss()

    train_dataset = create_dataset()
    train_sampler = torch.utils.data.distributed.DistributedSampler(
        train_dataset, num_replicas=xm.xrt_world_size(), rank=xm.get_ordinal(), shuffle=True)
    train_loader = torch.utils.data.DataLoader(train_dataset, batch_size=128, sampler=train_sampler)

    for epoch in range(EPOCHS):
        train_sampler.set_epoch(epoch)
        para_loader = pl.ParallelLoader(train_loader, [device])
        model.train()
        for data, target in para_loader.per_device_loader(device):
            optimizer.zero_grad()
            output = model(data)
            loss = loss_fn(output, target)
            loss.backward()
            xm.optimizer_step(optimizer)
        xm.mark_step()
        if xm.is_master_ordinal():
            print(f"epoch {epoch + 1}: loss {loss.item():.4f}", flush=True)

    if xm.is_master_ordinal():
        xm.save(model.state_dict(), OUT)
        print(f"test accuracy {test_accuracy(model):.4f}", flush=True)


if __name__ == "__main__":
    xmp.spawn(train_fn, args=(), nprocs=PROCS)
