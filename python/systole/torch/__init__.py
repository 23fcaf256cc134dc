# SPDX-License-Identifier: Apache-2.0
"""PyTorch on the simulated array, with torch_xla's names.

A script written for torch_xla runs with its imports changed and one line
added after the model is made:

    import systole.torch as xm                  # torch_xla.core.xla_model
    import systole.torch as pl                  # torch_xla.distributed.parallel_loader
    import systole.torch as xmp                 # torch_xla.distributed.xla_multiprocessing
    ...
    model = st.accelerate(model)                # the added line

(the modules systole.torch.core.xla_model, systole.torch.distributed.
parallel_loader and systole.torch.distributed.xla_multiprocessing give the
same names under torch_xla's paths). What runs where:

- accelerate(module) runs every nn.Linear, nn.Conv2d and torch.matmul/bmm
  of the module's forward and backward on the array (bf16 operands, fp32
  accumulation, the C++ runtime's bits); everything else stays PyTorch.
  Tensors stay in host memory: xla_device() is the CPU device.
- spawn(fn, nprocs=N) starts N processes, one replica each, joined through
  torch.distributed (gloo), every process seeded alike;
  optimizer_step(optimizer) averages the replicas' gradients in replica
  order (gather, add in order 0..N-1, scale by 1/N), so the result does not
  depend on how the replicas are spread over processes, then steps.
"""

from systole.torch.replicas import (
    MpDeviceLoader, ParallelLoader, all_gather, devices, get_ordinal, is_master_ordinal, mark_step,
    optimizer_step, reduce_gradients, rendezvous, save, spawn, world_size, xla_device, xrt_world_size,
)
from systole.torch.array_ops import accelerate, array_device, configure, linear, matmul

__all__ = [
    "MpDeviceLoader", "ParallelLoader", "accelerate", "all_gather", "array_device", "configure", "devices",
    "get_ordinal", "is_master_ordinal", "linear", "mark_step", "matmul", "optimizer_step", "reduce_gradients",
    "rendezvous", "save", "spawn", "world_size", "xla_device", "xrt_world_size",
]
