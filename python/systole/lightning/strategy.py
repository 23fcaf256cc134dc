# SPDX-License-Identifier: Apache-2.0
"""strategy="systole": Lightning's DDP process layout (one process per
replica, gloo between them, a DistributedSampler shard each) without
DistributedDataParallel. The replicas start from replica 0's weights, every
product of a step runs on the array, and the gradients are averaged in
replica order before each optimizer step (xm.reduce_gradients), as
Lightning's XLA strategy does with torch_xla's."""

import os

import torch
import torch.distributed as dist
from pytorch_lightning.accelerators import AcceleratorRegistry
from pytorch_lightning.strategies import DDPStrategy, StrategyRegistry
from pytorch_lightning.trainer.connectors.accelerator_connector import _AcceleratorConnector

from systole.torch import _job, array_ops
from systole.torch.core import xla_model as xm

_REDUCE_OPS = {"sum": xm.REDUCE_SUM, "max": xm.REDUCE_MAX, "min": xm.REDUCE_MIN, "product": xm.REDUCE_MUL}


def _op_name(reduce_op):
    """A reduce_op (a string, or torch.distributed.ReduceOp) as a string."""
    if reduce_op is None:
        return "mean"
    if isinstance(reduce_op, str):
        return reduce_op.lower()
    for name in ("SUM", "MAX", "MIN", "PRODUCT", "AVG"):
        if hasattr(dist.ReduceOp, name) and reduce_op == getattr(dist.ReduceOp, name):
            return name.lower()
    return repr(reduce_op)


class SystoleStrategy(DDPStrategy):
    strategy_name = "systole"

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("process_group_backend", "gloo")
        super().__init__(*args, **kwargs)

    def setup_environment(self):
        # The replicas share this machine's cores, as xmp.spawn's do.
        os.environ["SYSTOLE_LOCAL_PROCESSES"] = str(self.num_processes)
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // self.num_processes))
        _job.keep_freed_memory()
        super().setup_environment()
        if self.world_size > 1:
            _job.join_group(dist.distributed_c10d._get_default_group(), dist.distributed_c10d._get_default_store(),
                            self.global_rank, self.world_size)

    def configure_ddp(self):
        """Replica 0's parameters and buffers on every replica; no
        DistributedDataParallel wrapper (optimizer_step averages)."""
        xm.broadcast_master_state(self.model)

    def optimizer_step(self, optimizer, closure, model=None, **kwargs):
        def closure_then_average():
            result = closure()
            xm.reduce_gradients(optimizer)
            return result

        return super().optimizer_step(optimizer, closure_then_average, model, **kwargs)

    def training_step(self, *args, **kwargs):
        with array_ops.array_mode():
            return super().training_step(*args, **kwargs)

    def validation_step(self, *args, **kwargs):
        with array_ops.array_mode():
            return super().validation_step(*args, **kwargs)

    def test_step(self, *args, **kwargs):
        with array_ops.array_mode():
            return super().test_step(*args, **kwargs)

    def predict_step(self, *args, **kwargs):
        with array_ops.array_mode():
            return super().predict_step(*args, **kwargs)

    def reduce(self, tensor, group=None, reduce_op="mean"):
        """self.log(sync_dist=True) and friends: reduced in replica order."""
        if not isinstance(tensor, torch.Tensor) or self.world_size == 1:
            return tensor
        if group is not None:
            raise NotImplementedError("strategy='systole': reducing over a process group other than the replicas' is "
                                      "not supported")
        op = _op_name(reduce_op)
        if op in ("mean", "avg"):
            return xm.all_reduce(xm.REDUCE_SUM, tensor.float() if not tensor.is_floating_point() else tensor,
                                 scale=1.0 / self.world_size)
        if op not in _REDUCE_OPS:
            raise ValueError(f"strategy='systole': reduce_op {reduce_op!r} is not one of mean, sum, max, min, product")
        return xm.all_reduce(_REDUCE_OPS[op], tensor)

    def all_gather(self, tensor, group=None, sync_grads=False):
        """Every replica's tensor, stacked in replica order."""
        if self.world_size == 1:
            return tensor.unsqueeze(0)
        return xm.all_gather(tensor.unsqueeze(0))

    def barrier(self, name=None, *args, **kwargs):
        xm.rendezvous(f"lightning barrier {name or ''}".strip())

    def teardown(self):
        super().teardown()
        _job.current().close()
        _job.set_current(None)

    @classmethod
    def register_strategies(cls, strategy_registry):
        strategy_registry.register(cls.strategy_name, cls, description="the Systole array (systole.lightning)")


def _choose_strategy_for_systole(original):
    def choose(self):
        if self._accelerator_flag == "systole" or isinstance(self._accelerator_flag, _accelerator_class()):
            return SystoleStrategy.strategy_name
        return original(self)

    choose.systole = True
    return choose


def _accelerator_class():
    from systole.lightning.accelerator import SystoleAccelerator
    return SystoleAccelerator


def register():
    """accelerator="systole" and strategy="systole" in Lightning's
    registries; the first picks the second."""
    if "systole" not in AcceleratorRegistry:
        _accelerator_class().register_accelerators(AcceleratorRegistry)
    if "systole" not in StrategyRegistry:
        SystoleStrategy.register_strategies(StrategyRegistry)
    if not getattr(_AcceleratorConnector._choose_strategy, "systole", False):
        _AcceleratorConnector._choose_strategy = _choose_strategy_for_systole(_AcceleratorConnector._choose_strategy)
