# SPDX-License-Identifier: Apache-2.0
"""A small data-parallel job for the spawn tests: an MLP on random data,
each replica reading its DistributedSampler shard, torch_xla's loop. The
same steps can run in one process (reference), which computes every
replica's gradients itself and averages them in replica order."""

import torch
import torch.nn as nn

import systole.torch as st
import systole.torch.core.xla_model as xm
import systole.torch.distributed.parallel_loader as pl

EXAMPLES, FEATURES, CLASSES, BATCH, STEPS = 512, 37, 5, 16, 3
ROWS = 16  # the array every process of the tests uses


def dataset():
    generator = torch.Generator().manual_seed(7)
    x = torch.randn(EXAMPLES, FEATURES, generator=generator)
    y = torch.randint(0, CLASSES, (EXAMPLES,), generator=generator)
    return torch.utils.data.TensorDataset(x, y)


def make_model():
    return nn.Sequential(nn.Linear(FEATURES, 29), nn.ReLU(), nn.Linear(29, CLASSES))


def loader(replicas, rank):
    data = dataset()
    sampler = torch.utils.data.distributed.DistributedSampler(data, num_replicas=replicas, rank=rank, shuffle=True,
                                                              seed=3)
    return torch.utils.data.DataLoader(data, batch_size=BATCH, sampler=sampler)


def train(index, path):
    """One replica of the spawned job; the master saves the state_dict."""
    st.configure("sw_emu", array=(ROWS, ROWS))
    model = st.accelerate(make_model().to(xm.xla_device()))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    batches = pl.MpDeviceLoader(loader(xm.xrt_world_size(), xm.get_ordinal()), xm.xla_device())
    for step, (x, y) in enumerate(batches):
        if step == STEPS:
            break
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        xm.optimizer_step(optimizer)
    xm.save(model.state_dict(), path)


def reference(replicas, seed=0):
    """The same job in one process (its array configured as the replicas'):
    every replica's gradients on its shard, added in replica order and
    scaled by 1/replicas, then one step."""
    torch.manual_seed(seed)
    model = st.accelerate(make_model())
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    shards = [iter(loader(replicas, r)) for r in range(replicas)]
    for _ in range(STEPS):
        total = None
        for shard in shards:
            x, y = next(shard)
            optimizer.zero_grad()
            loss_fn(model(x), y).backward()
            flat = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
            total = flat.clone() if total is None else total.add_(flat)
        total.mul_(1.0 / replicas)
        offset = 0
        for p in model.parameters():
            p.grad.copy_(total[offset:offset + p.numel()].view_as(p))
            offset += p.numel()
        optimizer.step()
    return model.state_dict()
