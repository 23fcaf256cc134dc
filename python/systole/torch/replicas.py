# SPDX-License-Identifier: Apache-2.0
"""Replicas, processes and data loading with torch_xla's names and meaning.

One process per replica, as torch_xla runs one per device; the processes
talk through torch.distributed's gloo backend. Gradients are averaged in a
fixed replica order: added in the order 0, 1, ..., N-1 and multiplied by
1/N (torch_xla's scale), so every process gets the same bits, and they are
the bits one process computing the N replicas' gradients would get.
"""

import os
import queue
import socket
import tempfile
import threading

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def _joined():
    return dist.is_available() and dist.is_initialized()


def xla_device(n=None, devkind=None):
    """This replica's device. Tensors stay in host memory (the array reads
    them from there), so this is the CPU device; model.to(device) and
    data.to(device) keep working unchanged."""
    return torch.device("cpu")


def world_size():
    """The replicas in the job (1 outside spawn)."""
    return dist.get_world_size() if _joined() else 1


xrt_world_size = world_size


def get_ordinal(local=False):
    """This replica's index in the job, from 0."""
    return dist.get_rank() if _joined() else 0


def is_master_ordinal(local=True):
    """Whether this is replica 0."""
    return get_ordinal() == 0


def mark_step():
    """torch_xla runs the traced graph here; Systole runs every operation as
    it is called, so there is nothing left to run."""


def rendezvous(tag=""):
    """Waits until every replica has reached this point."""
    if _joined():
        dist.barrier()


def devices(spec="auto"):
    """The replicas a job uses, as Lightning's Trainer(devices=...) reads it:
    "auto" (one per core of this machine), a count N (0..N-1) or a list of
    indices. Pass len(devices(...)) to spawn as nprocs."""
    if spec == "auto":
        return list(range(os.cpu_count() or 1))
    if isinstance(spec, bool):
        raise TypeError(f"devices: expected 'auto', a count or a list of indices, got {spec!r}")
    if isinstance(spec, int):
        if spec < 1:
            raise ValueError(f"devices: a count must be at least 1, got {spec}")
        return list(range(spec))
    if isinstance(spec, (list, tuple)):
        if not spec or not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in spec):
            raise ValueError(f"devices: expected a non-empty list of indices >= 0, got {spec!r}")
        if len(set(spec)) != len(spec):
            raise ValueError(f"devices: an index is listed twice in {spec!r}")
        return list(spec)
    raise TypeError(f"devices: expected 'auto', a count or a list of indices, got {spec!r}")


def all_gather(tensor):
    """Every replica's `tensor`, stacked in replica order."""
    if not _joined():
        return tensor.unsqueeze(0).clone()
    parts = [torch.empty_like(tensor) for _ in range(world_size())]
    dist.all_gather(parts, tensor.contiguous())
    return torch.stack(parts)


def _gradients(optimizer):
    return [p.grad for group in optimizer.param_groups for p in group["params"] if p.grad is not None]


def _ordered_sum(flat, chunks=8):
    """The replicas' `flat` tensors summed in replica order,
    ((g_0 + g_1) + g_2) + ... + g_{N-1}, on the last replica: a chain in
    which replica r receives the running sum of replicas 0..r-1, adds its
    own and passes it on. The tensor goes in `chunks` pieces, so that the
    replicas work as a pipeline. These are the bits of gathering every
    replica's tensor and adding them in order, for one tensor's transfer per
    replica instead of N."""
    rank, count = get_ordinal(), world_size()
    total = flat.clone()
    size = -(-flat.numel() // chunks)
    sends = []
    for begin in range(0, flat.numel(), size):
        piece = slice(begin, min(flat.numel(), begin + size))
        if rank > 0:
            received = torch.empty(piece.stop - piece.start, dtype=flat.dtype)
            dist.recv(received, rank - 1)
            total[piece] = received.add_(flat[piece])
        if rank < count - 1:
            outgoing = total[piece].clone()
            sends.append((dist.isend(outgoing, rank + 1), outgoing))
    for request, _ in sends:
        request.wait()
    return total


def reduce_gradients(optimizer):
    """Replaces every gradient the optimizer holds by the replicas' mean,
    the same on every replica: added in replica order 0, 1, ..., N-1 (the
    bits of gathering them all and adding in order), then multiplied by 1/N
    as torch_xla scales its sum."""
    count = world_size()
    if count == 1:
        return
    grads = _gradients(optimizer)
    if not grads:
        return
    total = _ordered_sum(torch.cat([g.reshape(-1) for g in grads]))
    if get_ordinal() == count - 1:
        total.mul_(1.0 / count)
    dist.broadcast(total, count - 1)
    offset = 0
    for g in grads:
        g.copy_(total[offset:offset + g.numel()].view_as(g))
        offset += g.numel()


def optimizer_step(optimizer, barrier=False, optimizer_args=None):
    """torch_xla's optimizer_step: the replicas' mean gradient, then
    optimizer.step(**optimizer_args); returns what step returns."""
    reduce_gradients(optimizer)
    return optimizer.step(**(optimizer_args or {}))


def broadcast_master_state(module):
    """Copies replica 0's parameters and buffers to every replica."""
    if not _joined() or world_size() == 1:
        return
    with torch.no_grad():
        for tensor in list(module.parameters()) + list(module.buffers()):
            dist.broadcast(tensor.data, src=0)


def save(data, path, master_only=True, global_master=False):
    """torch.save by the master replica (every replica with
    master_only=False), atomically: a temporary file in the same directory,
    renamed over `path` once complete, so a reader never sees half a file.
    Every replica waits until it is written."""
    if not master_only or is_master_ordinal():
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
    rendezvous("save")


class _PerDeviceLoader:
    """A loader's batches, read up to `prefetch` batches ahead on a
    background thread (the array releases the GIL while it works, so
    reading overlaps it)."""

    def __init__(self, loader, prefetch):
        self._loader = loader
        self._prefetch = prefetch

    def __len__(self):
        return len(self._loader)

    def __iter__(self):
        ready = queue.Queue(self._prefetch)
        done = object()
        stop = threading.Event()

        def produce():
            try:
                for batch in self._loader:
                    while not stop.is_set():
                        try:
                            ready.put(batch, timeout=0.1)
                            break
                        except queue.Full:
                            continue
                    if stop.is_set():
                        return
                ready.put(done)
            except BaseException as error:  # raised again in the consumer
                ready.put(error)

        worker = threading.Thread(target=produce, daemon=True)
        worker.start()
        try:
            while True:
                item = ready.get()
                if item is done:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            stop.set()
            worker.join()


class ParallelLoader:
    """torch_xla's ParallelLoader(loader, devices): per_device_loader(device)
    iterates the loader's batches (already on the host, where the array
    reads them), prefetched on a background thread."""

    def __init__(self, loader, devices, batchdim=0, loader_prefetch_size=8, device_prefetch_size=4, **kwargs):
        self._loader = loader
        self._prefetch = max(1, loader_prefetch_size)

    def per_device_loader(self, device):
        """The batches for `device`: every device is the host here, so all
        of the loader's."""
        return _PerDeviceLoader(self._loader, self._prefetch)


class MpDeviceLoader:
    """torch_xla's MpDeviceLoader(loader, device): iterable, one pass each."""

    def __init__(self, loader, device, **kwargs):
        self._loader = loader
        self._device = device
        self._kwargs = kwargs

    def __len__(self):
        return len(self._loader)

    def __iter__(self):
        return iter(ParallelLoader(self._loader, [self._device], **self._kwargs).per_device_loader(self._device))


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _replica_main(index, fn, args, nprocs, port, seed):
    os.environ["SYSTOLE_LOCAL_PROCESSES"] = str(nprocs)
    # The replicas share this machine's cores.
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // nprocs))
    torch.manual_seed(seed)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=index, world_size=nprocs)
    try:
        fn(index, *args)
    finally:
        dist.destroy_process_group()


def spawn(fn, args=(), nprocs=None, join=True, daemon=False, start_method="spawn", seed=0):
    """torch_xla's xmp.spawn: runs fn(index, *args) in `nprocs` processes
    (default: one per core), one replica each, joined through gloo. Every
    process seeds PyTorch with `seed` before fn, so replicas start alike and
    two runs give the same bits. With nprocs=1, fn runs in this process."""
    if nprocs is None:
        nprocs = len(devices("auto"))
    if not isinstance(nprocs, int) or isinstance(nprocs, bool) or nprocs < 1:
        raise ValueError(f"spawn: nprocs must be a count >= 1, got {nprocs!r}")
    if nprocs == 1:
        torch.manual_seed(seed)
        return fn(0, *args)
    return mp.start_processes(_replica_main, args=(fn, tuple(args), nprocs, _free_port(), seed), nprocs=nprocs,
                              join=join, daemon=daemon, start_method=start_method)
