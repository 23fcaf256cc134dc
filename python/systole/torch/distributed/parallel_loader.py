# SPDX-License-Identifier: Apache-2.0
"""torch_xla.distributed.parallel_loader (import ... as pl): a loader's
batches for this replica's device, read ahead on a background thread (the
array releases the GIL while it works, so reading overlaps it). Batches stay
in host memory, where the array reads them. As torch_xla's loaders do, each
batch after the first ends the step before it (xm.mark_step, which runs the
step closures), and so does the end of the pass."""

import queue
import threading

from systole.torch.core import xla_model as xm


class PerDeviceLoader:
    """One pass over a loader's batches per iteration, read up to
    `prefetch` batches ahead."""

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
            first = True
            while True:
                item = ready.get()
                if not first:
                    xm.mark_step()
                first = False
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
    iterates the loader's batches, prefetched on a background thread."""

    def __init__(self, loader, devices, batchdim=0, batches_per_execution=1, loader_prefetch_size=8,
                 device_prefetch_size=4, host_to_device_transfer_threads=1, input_sharding=None):
        if input_sharding is not None:
            raise NotImplementedError("pl.ParallelLoader: input_sharding is not supported by systole.torch: the "
                                      "array is data-parallel, each replica loads its own batches")
        self._loader = loader
        self._prefetch = max(1, loader_prefetch_size)

    def per_device_loader(self, device):
        """The batches for `device` (this replica's: every batch)."""
        return PerDeviceLoader(self._loader, self._prefetch)


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
