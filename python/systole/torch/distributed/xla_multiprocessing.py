# SPDX-License-Identifier: Apache-2.0
"""torch_xla.distributed.xla_multiprocessing (import ... as xmp): spawn,
one process per replica."""

import os

import torch
import torch.multiprocessing as mp

from systole.torch import _job, array_ops


def replica_count():
    """How many replicas a job has unless told: SYSTOLE_NUM_DEVICES, or one
    per core of this machine (torch_xla: one per device)."""
    text = os.environ.get("SYSTOLE_NUM_DEVICES")
    if text is None:
        return os.cpu_count() or 1
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"SYSTOLE_NUM_DEVICES: expected a count >= 1, got {text!r}")
    return int(text)


def _run(job, fn, index, args, seed):
    """fn(index, *args) as replica `index` of `job`, seeded, every float32
    product on the array; tells the other replicas how it ended."""
    torch.manual_seed(seed)
    try:
        with array_ops.array_mode():
            result = fn(index, *args)
    except BaseException as error:
        job.note_failed(error)
        job.close()
        raise
    job.note_returned()
    job.close()
    return result


def _replica_main(index, fn, args, nprocs, port, seed):
    os.environ["SYSTOLE_LOCAL_PROCESSES"] = str(nprocs)
    # The replicas share this machine's cores.
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // nprocs))
    _job.keep_freed_memory()
    job = _job.join(index, nprocs, _job.open_store(port, nprocs))
    _run(job, fn, index, args, seed)


def spawn(fn, args=(), nprocs=None, join=True, daemon=False, start_method="spawn", seed=0):
    """Runs fn(index, *args) in `nprocs` processes (replica_count() by
    default), one replica each. Inside them every float32 nn.Linear,
    nn.Conv2d, F.linear, F.conv2d and torch.matmul/bmm runs on the array.
    Every process seeds PyTorch with `seed` before fn, so replicas start
    alike and two runs give the same bits. With nprocs=1, fn runs in this
    process. Returns as torch.multiprocessing.start_processes does (its
    ProcessContext with join=False)."""
    if nprocs is None:
        nprocs = replica_count()
    if not isinstance(nprocs, int) or isinstance(nprocs, bool) or nprocs < 1:
        raise ValueError(f"spawn: nprocs must be a count >= 1, got {nprocs!r}")
    if nprocs == 1:
        return _run(_job.current(), fn, 0, tuple(args), seed)
    store = _job.serve_store(nprocs)  # outlives every replica
    try:
        context = mp.start_processes(_replica_main, args=(fn, tuple(args), nprocs, store.port, seed),
                                     nprocs=nprocs, join=join, daemon=daemon, start_method=start_method)
    finally:
        if join:  # the replicas have ended, however: their shared memory goes
            _job.remove_shared(store)
    if context is not None:
        context.systole_store = store
    return context


class MpModelWrapper:
    """torch_xla's wrapper that shares one copy of a model's weights between
    spawned processes: here each replica holds its own, so this only hands
    the model back: MpModelWrapper(model).to(device) is model.to(device)."""

    def __init__(self, model):
        self._model = model

    def to(self, device):
        return self._model.to(device)


class MpSerialExecutor:
    """torch_xla's executor that runs functions one replica at a time on a
    machine: run(fn) returns fn() once this replica's turn comes."""

    def run(self, fn):
        from systole.torch.core import xla_model as xm
        result = None
        for turn in range(xm.xrt_world_size()):
            if turn == xm.get_ordinal():
                result = fn()
            xm.rendezvous(f"MpSerialExecutor turn {turn}")
        return result
