# SPDX-License-Identifier: Apache-2.0
"""PyTorch on the simulated array, with torch_xla's names and meanings.

A script written for torch_xla runs with its import lines changed, torch_xla
becoming systole.torch:

    import systole.torch as torch_xla
    import systole.torch.core.xla_model as xm
    import systole.torch.distributed.parallel_loader as pl
    import systole.torch.distributed.xla_multiprocessing as xmp
    import systole.torch.utils.utils as xu
    import systole.torch.debug.metrics as met
    import systole.torch.test.test_utils as test_utils
    import systole.torch.distributed.xla_backend      # init_process_group("xla")
    from systole.torch import runtime as xr

What runs where:
- Inside launch and xmp.spawn (one process per replica), and in a process
  that has asked for device() or xm.xla_device(), every float32 nn.Linear,
  nn.Conv2d, F.linear, F.conv2d, torch.matmul, Tensor.matmul/@ and bmm runs
  on the array, forward and backward (bf16 operands, fp32 accumulation, the
  C++ runtime's bits; bias gradients are fp32 sums). Everything else stays
  PyTorch on the host. accelerate(module) does the same for one module
  anywhere.
- Tensors stay in host memory, where the array reads them: device() is the
  CPU device, and model.to(device) and data.to(device) keep working.
- xm.optimizer_step averages the replicas' gradients in replica order (add
  in order 0..N-1, scale by 1/N), so the result does not depend on how the
  replicas are spread over processes; every collective is reproducible to
  the bit, and one that a replica cannot reach ends with an error naming it.

Names of torch_xla that mean nothing on a data-parallel array (SPMD
sharding, graph compilation) raise NotImplementedError saying so.
"""

import contextlib

import torch

from systole.torch import _unsupported, runtime
from systole.torch.array_ops import accelerate, array_device, configure, conv2d, linear, matmul
from systole.torch.core import xla_model as _xm
from systole.torch.distributed import xla_multiprocessing as _xmp

__all__ = [
    "accelerate", "array_device", "configure", "conv2d", "device", "device_count", "devices", "launch", "linear",
    "manual_seed", "matmul", "real_devices", "runtime", "step", "sync",
]

__getattr__ = _unsupported.getattr_for("torch_xla", {
    "compile": _unsupported.EAGER + "; call the function itself",
    "experimental": "torch_xla.experimental has no counterpart in systole.torch",
    "_XLAC": "torch_xla's C++ bindings have no counterpart; systole.Device is the array's",
})


def device(index=None):
    """This replica's device: the CPU device, where its tensors stay. From
    the first call on, this process's float32 products run on the array
    (inside launch they already do)."""
    return _xm.xla_device(index)


def devices():
    """This process's devices: its replica's one."""
    return [device()]


def real_devices():
    """The hardware behind this process's devices."""
    return [f"SYSTOLE:{runtime.global_ordinal()}"]


def device_count():
    """Devices per process: one."""
    return 1


def sync(wait=False, reset_scope=True):
    """The end of a step (xm.mark_step): runs the step closures."""
    _xm.mark_step(wait=wait, reset_scope=reset_scope)


@contextlib.contextmanager
def step():
    """A training step: sync() when it ends."""
    try:
        yield
    finally:
        sync()


def manual_seed(seed, device=None):
    """Seeds PyTorch's generator, which the replica's tensors use."""
    torch.manual_seed(seed)


def launch(fn, args=(), start_method="spawn", debug_single_process=False):
    """torch_xla.launch: runs fn(index, *args) on every replica, one process
    each (SYSTOLE_NUM_DEVICES of them, or one per core); in this process
    alone with debug_single_process. See xmp.spawn."""
    nprocs = 1 if debug_single_process else _xmp.replica_count()
    return _xmp.spawn(fn, args=args, nprocs=nprocs, start_method=start_method)
