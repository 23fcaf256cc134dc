# SPDX-License-Identifier: Apache-2.0
"""torch_xla.core.xla_model (import systole.torch.core.xla_model as xm):
devices, replicas and their collectives, with torch_xla's names, arguments
and meanings.

One process per replica, as torch_xla runs one per device. Every collective
is reproducible to the bit: a sum adds the replicas' tensors in replica
order, ((x_0 + x_1) + x_2) + ... + x_{N-1}, whatever the transport, so
every replica gets the bits one process adding the N tensors in order would
get. Products run on the array when they are called; tensors stay in host
memory (the array reads them there), so xla_device() is the CPU device.
"""

import os
import pickle
import sys
import tempfile
import time

import torch

from systole.torch import _job, _unsupported, array_ops

REDUCE_SUM = "sum"
REDUCE_MUL = "mul"
REDUCE_AND = "and"
REDUCE_OR = "or"
REDUCE_MIN = "min"
REDUCE_MAX = "max"

__getattr__ = _unsupported.getattr_for("torch_xla.core.xla_model", {
    "all_to_all": _unsupported.SPMD + "; all_gather or reduce_scatter exchange data between replicas",
    "collective_permute": _unsupported.SPMD + "; all_gather exchanges data between replicas",
    "collective_broadcast": "use broadcast_master_param, or all_gather and take replica 0's part",
    "send": "point-to-point transfers between replicas are not offered; use all_gather",
    "recv": "point-to-point transfers between replicas are not offered; use all_gather",
    "get_memory_info": "tensors stay in host memory; see torch_xla.debug.metrics for the array's bytes moved",
    "get_stablehlo": _unsupported.EAGER,
    "get_stablehlo_bytecode": _unsupported.EAGER,
    "mark_sharding": _unsupported.SPMD,
})


def xla_device(n=None, devkind=None):
    """This replica's device: the CPU device, where its tensors stay (the
    array reads them from host memory). From the first call on, this
    process's float32 linear layers, convolutions and matrix products run on
    the array (inside spawn and launch they already do)."""
    array_ops.enable_array_mode()
    return torch.device("cpu")


def xla_device_hw(device):
    """The kind of hardware behind `device`: "SYSTOLE"."""
    return "SYSTOLE"


def is_xla_tensor(tensor):
    """Whether `tensor` is on this replica's device (host memory)."""
    return tensor.device.type == "cpu"


def get_ordinal(defval=0):
    """This replica's index in the job, from 0 (`defval` is torch_xla's
    value outside a job: 0 here too)."""
    job = _job.current()
    return job.rank if job.size > 1 else defval


def get_local_ordinal(defval=0):
    """This replica's index on this machine (every replica is local)."""
    return get_ordinal(defval)


def xrt_world_size(defval=1):
    """The replicas in the job (`defval` outside one)."""
    job = _job.current()
    return job.size if job.size > 1 else defval


def is_master_ordinal(local=True):
    """Whether this is replica 0 (of the machine, or of the job: the same
    here, as every replica runs on this machine)."""
    return _job.current().rank == 0


def master_print(*args, fd=sys.stdout, local=False, flush=False):
    """print on replica 0 only."""
    if is_master_ordinal(local):
        print(*args, file=fd, flush=flush)


_closures = []


def add_step_closure(closure, args=(), run_async=False):
    """Runs closure(*args) at the end of this step (the next mark_step,
    which MpDeviceLoader calls between batches), after the step's work, as
    torch_xla does. Closures run in the order they were added, on this
    thread (run_async too: the step's values are already computed)."""
    _closures.append((closure, tuple(args)))


def mark_step(wait=False, reset_scope=True):
    """The end of a step: torch_xla runs the step's graph here; Systole ran
    every operation as it was called, so only the step closures are left
    to run."""
    while _closures:
        closure, args = _closures.pop(0)
        closure(*args)


def wait_device_ops(devices=()):
    """Waits for the device's queued work: none is ever left, as every
    operation completes when it is called."""


def set_rng_state(seed, device=None):
    """Seeds PyTorch's generator (the one the replica's tensors use)."""
    torch.manual_seed(seed)


def get_rng_state(device=None):
    """The seed of PyTorch's generator."""
    return torch.initial_seed()


def rendezvous(tag, payload=b"", replicas=()):
    """Waits until every replica has reached rendezvous(`tag`); returns
    their payloads (bytes) in replica order."""
    if replicas:
        raise NotImplementedError("xm.rendezvous: a rendezvous of some replicas (replicas=...) is not supported by "
                                  "systole.torch; every replica takes part")
    if not isinstance(payload, (bytes, bytearray)):
        raise TypeError(f"xm.rendezvous: payload must be bytes, got {type(payload).__name__}")
    return _job.current().rendezvous(f"rendezvous {tag!r}", bytes(payload))


def mesh_reduce(tag, data, reduce_fn):
    """reduce_fn(every replica's `data`, in replica order), on every
    replica: any picklable data, e.g. mesh_reduce("accuracy", acc, np.mean)."""
    payloads = _job.current().rendezvous(f"mesh_reduce {tag!r}", pickle.dumps(data))
    return reduce_fn([pickle.loads(p) for p in payloads])


# --- tensor collectives -------------------------------------------------------


_FOLDS = {
    REDUCE_SUM: torch.add,
    REDUCE_MUL: torch.mul,
    REDUCE_MIN: torch.minimum,
    REDUCE_MAX: torch.maximum,
    REDUCE_AND: torch.bitwise_and,
    REDUCE_OR: torch.bitwise_or,
}


def _check_reduce_type(name, reduce_type):
    if reduce_type not in _FOLDS:
        raise ValueError(f"{name}: reduce_type must be one of xm.REDUCE_SUM, REDUCE_MUL, REDUCE_MIN, REDUCE_MAX, "
                         f"REDUCE_AND, REDUCE_OR; got {reduce_type!r}")


def _group_of(name, groups, job):
    """The replicas of this replica's group, in order (all without groups)."""
    if not groups:
        return list(range(job.size))
    members = [list(g) for g in groups]
    flat = [r for g in members for r in g]
    if sorted(flat) != list(range(job.size)):
        raise ValueError(f"{name}: groups must list every replica 0..{job.size - 1} once, got {groups!r}")
    return next(g for g in members if job.rank in g)


def _reduce(name, job, tensors, reduce_type, scale, groups):
    """The replicas' `tensors` (flattened, concatenated) reduced in replica
    order (within this replica's group), times `scale`: the same bits on
    every replica. The result may be a buffer the next reduction reuses:
    copy what must last."""
    members = _group_of(name, groups, job)
    pieces = [t.detach().reshape(-1) for t in tensors]
    if job.size == 1 or len(members) == 1:
        total = torch.cat(pieces)
        return total.mul_(scale) if scale != 1.0 else total
    parts = job.exchange(name, pieces)
    fold = _FOLDS[reduce_type]
    total = job.scratch(parts[0].dtype, parts[0].numel())
    fold(parts[members[0]], parts[members[1]], out=total)
    for rank in members[2:]:
        fold(total, parts[rank], out=total)
    return total.mul_(scale) if scale != 1.0 else total


def all_reduce(reduce_type, inputs, scale=1.0, groups=None, pin_layout=True):
    """Every replica's `inputs` reduced with `reduce_type` (xm.REDUCE_SUM,
    ...) in replica order, times `scale`. A tensor gives a new tensor; a
    list or tuple of tensors is reduced in place and returned."""
    _check_reduce_type("xm.all_reduce", reduce_type)
    job = _job.current()
    if isinstance(inputs, torch.Tensor):
        return _reduce("xm.all_reduce", job, [inputs], reduce_type, scale, groups).view_as(inputs).clone()
    tensors = list(inputs)
    if not tensors:
        return inputs
    if any(not isinstance(t, torch.Tensor) or t.dtype != tensors[0].dtype for t in tensors):
        raise TypeError("xm.all_reduce: inputs must be a tensor or a list of tensors of one dtype")
    total = _reduce("xm.all_reduce", job, tensors, reduce_type, scale, groups)
    offset = 0
    with torch.no_grad():
        for t in tensors:
            t.copy_(total[offset:offset + t.numel()].view_as(t))
            offset += t.numel()
    return inputs


def all_gather(value, dim=0, groups=None, output=None, pin_layout=True):
    """Every replica's `value`, concatenated along `dim` in replica order
    (within this replica's group)."""
    job = _job.current()
    members = _group_of("xm.all_gather", groups, job)
    if job.size == 1:
        parts = [value]
    else:
        with job.collective("xm.all_gather"):
            gathered = job.all_gather(value)
        parts = [gathered[r] for r in members]
    result = torch.cat(parts, dim=dim)
    if output is not None:
        output.copy_(result)
        return output
    return result


def reduce_scatter(reduce_type, input, scale, scatter_dim, shard_count, groups=None, output=None, pin_layout=True):
    """all_reduce of `input`, then this replica's share of it: the result
    cut into `shard_count` equal pieces along `scatter_dim`, the piece with
    this replica's index in its group."""
    _check_reduce_type("xm.reduce_scatter", reduce_type)
    job = _job.current()
    members = _group_of("xm.reduce_scatter", groups, job)
    if shard_count != len(members):
        raise ValueError(f"xm.reduce_scatter: shard_count {shard_count} is not the {len(members)} replicas of the "
                         "group")
    if input.shape[scatter_dim] % shard_count:
        raise ValueError(f"xm.reduce_scatter: dimension {scatter_dim} of size {input.shape[scatter_dim]} does not "
                         f"split into {shard_count} equal shards")
    total = _reduce("xm.reduce_scatter", job, [input], reduce_type, scale, groups).view_as(input)
    piece = total.chunk(shard_count, dim=scatter_dim)[members.index(job.rank)].clone()
    if output is not None:
        output.copy_(piece)
        return output
    return piece


def _gradients(optimizer):
    return [p.grad for group in optimizer.param_groups for p in group["params"] if p.grad is not None]


def reduce_gradients(optimizer, groups=None, pin_layout=True):
    """Replaces every gradient the optimizer holds by the replicas' mean:
    added in replica order 0, 1, ..., N-1, then multiplied by 1/N, as
    torch_xla scales its sum; the same bits on every replica."""
    job = _job.current()
    grads = _gradients(optimizer)
    if job.size == 1 or not grads:
        return
    count = len(_group_of("xm.reduce_gradients", groups, job))
    all_reduce(REDUCE_SUM, grads, scale=1.0 / count, groups=groups)


def optimizer_step(optimizer, barrier=False, optimizer_args=None, groups=None, pin_layout=True):
    """The replicas' mean gradient (reduce_gradients), then
    optimizer.step(**optimizer_args); returns what step returns. With
    `barrier`, the step ends here (mark_step)."""
    reduce_gradients(optimizer, groups=groups)
    result = optimizer.step(**(optimizer_args or {}))
    if barrier:
        mark_step()
    return result


def broadcast_master_param(model):
    """Copies replica 0's parameters to every replica."""
    _broadcast_from_master("xm.broadcast_master_param", list(model.parameters()))


def broadcast_master_state(model):
    """Copies replica 0's parameters and buffers to every replica."""
    _broadcast_from_master("broadcast_master_state", list(model.parameters()) + list(model.buffers()))


def _broadcast_from_master(name, tensors):
    job = _job.current()
    if job.size == 1 or not tensors:
        return
    with torch.no_grad(), job.collective(name):
        for tensor in tensors:
            job.broadcast(tensor.data, 0)


def save(data, file_or_path, master_only=True, global_master=False):
    """torch.save of `data` by the master (by every replica with
    master_only=False), atomically: a temporary file in the same directory,
    renamed over the path once complete, so a reader never sees half a
    file; then every replica waits until it is written.

    A master that calls save alone (under `if xm.is_master_ordinal():`)
    writes the file and completes once every other replica has returned
    from its function, with a one-line warning: torch_xla would wait there
    for them forever."""
    job = _job.current()
    writes = not master_only or is_master_ordinal()
    if writes:
        if isinstance(file_or_path, (str, os.PathLike)):
            _save_atomically(data, os.fspath(file_or_path))
        else:
            torch.save(data, file_or_path)
    gone = [r for r, p in enumerate(job.rendezvous("xm.save", tolerate_returned=True)) if p is None]
    if gone:
        which = f"replica {gone[0]}" if len(gone) == 1 else f"replicas {_ranges(gone)}"
        print(f"systole.torch: warning: xm.save on replica {job.rank}: {which} had returned "
              "without calling it; the file is written, but torch_xla would wait here for them forever (call "
              "xm.save on every replica)", file=sys.stderr, flush=True)


def _save_atomically(data, path):
    directory = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(prefix=".systole-save-", dir=directory)
    try:
        with os.fdopen(handle, "wb") as f:
            torch.save(data, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def _ranges(ranks):
    """[1, 2, 3, 5] -> "1-3, 5"."""
    out, start = [], None
    for i, r in enumerate(ranks):
        if start is None:
            start = r
        if i + 1 == len(ranks) or ranks[i + 1] != r + 1:
            out.append(str(start) if start == r else f"{start}-{r}")
            start = None
    return ", ".join(out)


class RateTracker:
    """Samples per second, as torch_xla's: add(count) as samples are done;
    rate() the rate since the last call of rate(), smoothed exponentially
    (smooth_factor, 0.4 by default, weighs the previous rate);
    global_rate() since the tracker was made."""

    def __init__(self, smooth_factor=None):
        self._smooth = 0.4 if smooth_factor is None else smooth_factor
        self._start = self._last = time.time()
        self._total = self._since_last = 0
        self._rate = None

    def add(self, count):
        self._total += count
        self._since_last += count

    def rate(self):
        now = time.time()
        elapsed = now - self._last
        if elapsed > 0:
            current = self._since_last / elapsed
            self._rate = current if self._rate is None else self._smooth * self._rate + (1 - self._smooth) * current
            self._last, self._since_last = now, 0
        return self._rate or 0.0

    def global_rate(self):
        elapsed = time.time() - self._start
        return self._total / elapsed if elapsed > 0 else 0.0
