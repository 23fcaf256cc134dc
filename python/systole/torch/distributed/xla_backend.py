# SPDX-License-Identifier: Apache-2.0
"""torch_xla.distributed.xla_backend: importing it lets a script call

    torch.distributed.init_process_group("xla", init_method="xla://")

inside spawn or launch, as torch_xla's DDP scripts do: the "xla" backend is
gloo over the job's own store (the replicas' index and count are the
job's), so torch.distributed's collectives and DistributedDataParallel work
between the replicas. DDP's all-reduce is gloo's, not the replica-ordered
sum of xm.optimizer_step: its bits may depend on the replica count."""

import datetime

import torch.distributed as dist
import sys

from systole.torch import _job


def _rendezvous(url, timeout=None, **kwargs):
    job = _job.current()
    if job.size == 1:
        yield dist.HashStore(), 0, 1
    else:
        yield dist.PrefixStore("default/", job.store), job.rank, job.size
    raise RuntimeError("systole.torch: the xla:// rendezvous has been used up (init_process_group called twice?)")


def _create_group(store, rank, size, timeout):
    return dist.ProcessGroupGloo(store, rank, size, timeout or datetime.timedelta(seconds=_job.timeout()))


if "xla" not in sys.modules["torch.distributed.rendezvous"]._rendezvous_handlers:
    dist.register_rendezvous_handler("xla", _rendezvous)
if not hasattr(dist.Backend, "XLA"):
    dist.Backend.register_backend("xla", _create_group)
