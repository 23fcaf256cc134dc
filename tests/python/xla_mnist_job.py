# SPDX-License-Identifier: Apache-2.0
"""A torch_xla training script in the two shapes torch_xla's own MNIST test
has had, written against torch_xla's API with only the imports naming
systole.torch: --form 2023 (xm.xla_device, xmp.spawn, xm.xrt_world_size,
xm.get_ordinal) and --form current (torch_xla.device, torch_xla.launch,
xr.world_size, xr.global_ordinal). A small convolutional net with BatchNorm
on a Fashion-MNIST subset, a DistributedSampler shard per replica, SGD with
momentum through xm.optimizer_step, step closures, RateTracker, mesh_reduce
of the test accuracy, the metrics report, and xm.save by the master alone
(as scripts write it). Prints "Max Accuracy: X%" and the saved state_dict's
path; --ddp trains through torch.distributed's "xla" backend and
DistributedDataParallel instead.

    python xla_mnist_job.py --form current --out model.pt [--ddp]
"""

import argparse
import gzip
import os
import sys

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.nn.parallel import DistributedDataParallel as DDP

import systole.torch as torch_xla  # was: import torch_xla
import systole.torch.core.xla_model as xm  # was: torch_xla.core.xla_model
import systole.torch.debug.metrics as met  # was: torch_xla.debug.metrics
import systole.torch.distributed.parallel_loader as pl  # was: torch_xla.distributed.parallel_loader
import systole.torch.distributed.xla_backend  # noqa: F401  (was: torch_xla.distributed.xla_backend)
import systole.torch.distributed.xla_multiprocessing as xmp  # was: torch_xla.distributed.xla_multiprocessing
import systole.torch.test.test_utils as test_utils  # was: torch_xla.test.test_utils
import systole.torch.utils.utils as xu  # was: torch_xla.utils.utils
from systole.torch import runtime as xr  # was: from torch_xla import runtime as xr

DATA = "/usr/share/datasets/fashion-mnist"
TRAIN, TEST, BATCH = 1024, 1000, 32


def read_idx(name, offset, count, size):
    with gzip.open(os.path.join(DATA, name)) as f:
        return np.frombuffer(f.read(offset + count * size), dtype=np.uint8, offset=offset)


def dataset(train):
    prefix, count = ("train", TRAIN) if train else ("t10k", TEST)
    images = read_idx(f"{prefix}-images-idx3-ubyte.gz", 16, count, 784).reshape(-1, 1, 28, 28)
    labels = read_idx(f"{prefix}-labels-idx1-ubyte.gz", 8, count, 1)
    x = (torch.from_numpy(images.astype(np.float32)) / 255.0 - 0.2860) / 0.3530
    return torch.utils.data.TensorDataset(x, torch.from_numpy(labels.astype(np.int64)))


class MNIST(nn.Module):

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
        self.bn1 = nn.BatchNorm2d(10)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
        self.bn2 = nn.BatchNorm2d(20)
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)

    def forward(self, x):
        x = self.bn1(F.relu(F.max_pool2d(self.conv1(x), 2)))
        x = self.bn2(F.relu(F.max_pool2d(self.conv2(x), 2)))
        x = F.relu(self.fc1(torch.flatten(x, 1)))
        return F.log_softmax(self.fc2(x), dim=1)


def loaders(world_size, ordinal, fake):
    if fake:
        data = (torch.zeros(BATCH, 1, 28, 28), torch.zeros(BATCH, dtype=torch.int64))
        return (xu.SampleGenerator(data=data, sample_count=TRAIN // BATCH // world_size),
                xu.SampleGenerator(data=data, sample_count=TEST // BATCH // world_size))
    train, test = dataset(True), dataset(False)
    sampler = torch.utils.data.distributed.DistributedSampler(train, num_replicas=world_size, rank=ordinal,
                                                              shuffle=True, seed=5)
    test_sampler = torch.utils.data.distributed.DistributedSampler(test, num_replicas=world_size, rank=ordinal,
                                                                   shuffle=False)
    return (torch.utils.data.DataLoader(train, batch_size=BATCH, sampler=sampler, drop_last=True),
            torch.utils.data.DataLoader(test, batch_size=BATCH, sampler=test_sampler))


def train_mnist(flags):
    if flags.ddp:
        dist.init_process_group("xla", init_method="xla://")
    torch.manual_seed(1)
    if flags.form == "2023":
        world_size, ordinal, device = xm.xrt_world_size(), xm.get_ordinal(), xm.xla_device()
    else:
        world_size, ordinal, device = xr.world_size(), xr.global_ordinal(), torch_xla.device()
    train_loader, test_loader = loaders(world_size, ordinal, flags.fake_data)
    model = MNIST().to(device)
    xm.broadcast_master_param(model)
    if flags.ddp:
        model = DDP(model, gradient_as_bucket_view=True)
    optimizer = optim.SGD(model.parameters(), lr=0.01 * world_size, momentum=0.5)
    loss_fn = nn.NLLLoss()

    def train_loop_fn(loader, epoch):
        tracker = xm.RateTracker()
        model.train()
        for step, (data, target) in enumerate(loader):
            optimizer.zero_grad()
            loss = loss_fn(model(data), target)
            loss.backward()
            if flags.ddp:
                optimizer.step()
            else:
                xm.optimizer_step(optimizer)
            tracker.add(BATCH)
            if step % 10 == 0:
                xm.add_step_closure(test_utils.print_training_update,
                                    args=(device, step, loss.item(), tracker.rate(), tracker.global_rate(), epoch))

    def test_loop_fn(loader):
        total, correct = 0, 0
        model.eval()
        with torch.no_grad():
            for data, target in loader:
                pred = model(data).max(1, keepdim=True)[1]
                correct += pred.eq(target.view_as(pred)).sum().item()
                total += data.size()[0]
        return xm.mesh_reduce("test_accuracy", 100.0 * correct / total, np.mean)

    train_device_loader = pl.MpDeviceLoader(train_loader, device)
    test_device_loader = pl.MpDeviceLoader(test_loader, device)
    max_accuracy = 0.0
    for epoch in range(1, flags.num_epochs + 1):
        xm.master_print(f"Epoch {epoch} train begin {test_utils.now()}")
        train_loop_fn(train_device_loader, epoch)
        accuracy = test_loop_fn(test_device_loader)
        xm.master_print(f"Epoch {epoch} test end {test_utils.now()}, Accuracy={accuracy:.2f}")
        max_accuracy = max(accuracy, max_accuracy)
    xm.master_print(met.metrics_report())
    xm.master_print(f"Max Accuracy: {max_accuracy:.2f}%")
    if xm.is_master_ordinal():
        xm.save(model.state_dict(), flags.out)  # the master alone, as many scripts call it
    return max_accuracy


def _mp_fn(index, flags):
    torch.set_default_dtype(torch.float32)
    train_mnist(flags)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--form", choices=["2023", "current"], required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--num_cores", type=int, default=2)
    parser.add_argument("--num_epochs", type=int, default=2)
    parser.add_argument("--fake_data", action="store_true")
    parser.add_argument("--ddp", action="store_true")
    flags = parser.parse_args()
    if flags.form == "2023":
        xmp.spawn(_mp_fn, args=(flags,), nprocs=flags.num_cores)
    else:
        os.environ["SYSTOLE_NUM_DEVICES"] = str(flags.num_cores)
        torch_xla.launch(_mp_fn, args=(flags,), debug_single_process=flags.num_cores == 1)


if __name__ == "__main__":
    sys.exit(main())
