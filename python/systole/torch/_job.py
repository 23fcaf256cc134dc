# SPDX-License-Identifier: Apache-2.0
"""The job a process belongs to: its replicas, and the collectives between
them, each of which ends either complete or with an error that names it and
the replicas that did not reach it, never in a hang or a transport error.

A job of N > 1 replicas has a key-value store (torch.distributed's
TCPStore, served by the process that started the replicas, so that it
outlives any one of them) and a gloo process group of its own beside the
default one, which stays the user's: a script may still call
torch.distributed.init_process_group itself (see distributed/xla_backend.py).
Lightning's processes use Lightning's default group instead
(systole.lightning).

Every collective has a sequence number, the same on every replica as long as
they call the same collectives in the same order. A replica marks its
arrival at each in the store before it starts; a replica whose function
returns or raises says so in the store too. So when a collective cannot
complete, what it raises says which replicas were not there and why; and a
rendezvous that only the master reaches (torch_xla's xm.save under
`if xm.is_master_ordinal():`, as many scripts call it) can complete once
every other replica has returned.

The replicas run on one machine, and the reductions (all_reduce, the
gradients' mean) pass their tensors through memory they share: files in a
directory of the job's under /dev/shm, each replica's two slots mapped by
every replica. A replica writes its tensor into a slot, says so in the
store, and once every replica has, each folds the slots in replica order
itself: the same additions in the same order, so the same bits everywhere,
with no transfer. A replica writes a slot again only two collectives later,
by when every replica has arrived at the one between, so has read it.
"""

import contextlib
import ctypes
import datetime
import os
import pickle
import shutil
import tempfile
import time

import numpy as np
import torch
import torch.distributed as dist


class CollectiveError(RuntimeError):
    """A collective that could not complete on every replica."""


def timeout():
    """How long a collective waits for the other replicas, in seconds
    (SYSTOLE_COLLECTIVE_TIMEOUT; 300 by default)."""
    text = os.environ.get("SYSTOLE_COLLECTIVE_TIMEOUT", "300")
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not seconds > 0:
        raise ValueError(f"SYSTOLE_COLLECTIVE_TIMEOUT: expected a number of seconds > 0, got {text!r}")
    return seconds


class Job:
    """This process's replica of a job: its index (rank), the replica count,
    and the collectives among them."""

    def __init__(self, rank, size, store=None, group=None):
        self.rank = rank
        self.size = size
        self.store = store  # the job's store (a prefix of it is this module's)
        self._store = dist.PrefixStore("systole/", store) if store is not None else None
        self._group = group
        self._sequence = 0
        self.timeout = timeout() if size > 1 else None
        self._shared = None  # the job's shared-memory directory, once known
        self._mapped = {}  # slot file -> its mapping here (a uint8 tensor)
        self._scratch = {}  # dtype -> scratch()'s tensor
        if self._store is not None:
            # The markers exist from the start (0: running), so that asking
            # after a replica never adds keys to the store.
            self._store.add(f"returned/{rank}", 0)
            self._store.add(f"failed/{rank}", 0)

    # --- what the store knows of each replica -----------------------------

    def _count(self, key):
        return self._store.add(key, 0)

    def _whereabouts(self, rank):
        """Why replica `rank` may not come: it returned, or failed (and
        how), or None while it runs."""
        if self._count(f"returned/{rank}"):
            return "returned from its function"
        if self._count(f"failed/{rank}"):
            return "failed: " + self._store.get(f"failed/{rank}/why").decode("utf-8", "replace")
        return None

    def _missing_text(self, name, sequence, missing, waited=None):
        reasons = []
        for rank in missing:
            where = self._whereabouts(rank)
            reasons.append(f"replica {rank} " + (where if where else "is still running"))
        after = f" after {waited:.0f} s" if waited is not None else ""
        return (f"systole.torch: {name} (collective #{sequence}) on replica {self.rank} of {self.size} "
                f"could not complete{after}: " + "; ".join(reasons))

    def note_returned(self):
        """Tells the other replicas this one's function returned."""
        if self._store is not None:
            self._store.add(f"returned/{self.rank}", 1)

    def note_failed(self, error):
        """Tells the other replicas this one's function raised `error`."""
        if self._store is not None:
            self._store.set(f"failed/{self.rank}/why", f"{type(error).__name__}: {error}"[:500])
            self._store.add(f"failed/{self.rank}", 1)

    # --- collectives ------------------------------------------------------

    # A replica's keys of collective s are those of s % 2: it uses them
    # again at s + 2 only, by when every replica has arrived at s + 1, so
    # has read them (every collective, a broadcast's root too, waits for
    # all to arrive). The store holds a few keys per replica however long
    # the job.

    def _others(self):
        return [r for r in range(self.size) if r != self.rank]

    def _arrive(self):
        """Says in the store that this replica has come to its next
        collective, after writing what the others will read of it there."""
        self._sequence += 1
        self._store.add(f"at/{self._sequence % 2}/{self.rank}", 1)
        return self._sequence

    def _has_arrived(self, rank, sequence):
        # Replica `rank` has counted one arrival on its key of `sequence`
        # for every collective of the same parity up to it.
        return self._count(f"at/{sequence % 2}/{rank}") >= (sequence + 1) // 2

    def _wait(self, name, sequence, tolerate_returned=False, ranks=None, arrived=None):
        """Waits until every replica of `ranks` (the others) has arrived at
        collective `sequence` (or until `arrived(rank)`). Returns the
        replicas that returned instead of coming, if `tolerate_returned`;
        raises CollectiveError when one failed, or returned while not
        tolerated, or when the time is up."""
        arrived = arrived or (lambda rank: self._has_arrived(rank, sequence))
        start = time.monotonic()
        pause = 0.0001
        waiting = list(self._others() if ranks is None else ranks)
        gone = []
        while waiting:
            waited = time.monotonic() - start
            for rank in list(waiting):
                if arrived(rank):
                    waiting.remove(rank)
                    continue
                # A replica that is only late costs no more questions.
                where = self._whereabouts(rank) if waited > 0.05 else None
                if where is not None and (tolerate_returned and where.startswith("returned")):
                    gone.append(rank)
                    waiting.remove(rank)
                elif where is not None:
                    raise CollectiveError(self._missing_text(name, sequence, [rank]))
            if not waiting:
                break
            if waited > self.timeout:
                raise CollectiveError(self._missing_text(name, sequence, sorted(waiting), waited))
            # Late by a quarter of the wait so far at most.
            time.sleep(pause)
            pause = min(pause * 1.25, 0.05)
        return sorted(gone)

    def _message(self, sequence, message):
        """Leaves `message` for the others at collective `sequence`."""
        self._store.set(f"message/{sequence % 2}/{self.rank}", pickle.dumps(message))

    def _message_of(self, rank, sequence):
        return pickle.loads(self._store.get(f"message/{sequence % 2}/{rank}"))

    def _mismatch(self, sequence, mine, rank, theirs):
        return CollectiveError(f"systole.torch: collective #{sequence}: replica {self.rank} is at {mine} where "
                               f"replica {rank} is at {theirs}: every replica must call the same collectives in the "
                               "same order")

    def rendezvous(self, name, payload=b"", tolerate_returned=False):
        """Every replica's `payload` (bytes), in replica order, once all have
        come to this rendezvous under the same `name`; with
        `tolerate_returned`, the replicas that had returned instead are
        left out (None in their place)."""
        if self.size == 1:
            return [payload]
        sequence = self._sequence + 1
        self._message(sequence, (name, payload))
        self._arrive()
        gone = self._wait(name, sequence, tolerate_returned)
        payloads = []
        for rank in range(self.size):
            if rank in gone:
                payloads.append(None)
                continue
            theirs, data = (name, payload) if rank == self.rank else self._message_of(rank, sequence)
            if theirs != name:
                raise self._mismatch(sequence, repr(name), rank, repr(theirs))
            payloads.append(data)
        return payloads

    def exchange(self, name, pieces):
        """Every replica's `pieces` (1-D tensors of one dtype, concatenated;
        of one dtype and size on every replica) in replica order, once all
        have come to this collective under the same `name`: views of the
        replicas' slots in shared memory, valid until this replica's next
        collective but one (copy what must last longer)."""
        sequence = self._sequence + 1  # _arrive's
        dtype = pieces[0].dtype
        numel = sum(piece.numel() for piece in pieces)
        nbytes = numel * pieces[0].element_size()
        mine = self._slot(name, self.rank, sequence, nbytes).view(dtype)
        torch.cat(pieces, out=mine)
        shape = f"{dtype} x {numel}"
        self._message(sequence, (name, shape))
        self._arrive()
        self._wait(name, sequence)
        parts = []
        for rank in range(self.size):
            if rank == self.rank:
                parts.append(mine)
                continue
            theirs, their_shape = self._message_of(rank, sequence)
            if (theirs, their_shape) != (name, shape):
                raise self._mismatch(sequence, f"{name!r} with {shape}", rank, f"{theirs!r} with {their_shape}")
            parts.append(self._slot(name, rank, sequence, nbytes).view(dtype))
        return parts

    def scratch(self, dtype, numel):
        """A tensor of `numel` elements this replica reuses from one
        reduction to the next (a fresh one each time would cost its page
        faults again)."""
        held = self._scratch.get(dtype)
        if held is None or held.numel() < numel:
            held = self._scratch[dtype] = torch.empty(numel, dtype=dtype)
        return held[:numel]

    def _shared_directory(self, name, sequence):
        """The job's directory of slots: replica 0 makes it at the first
        exchange and names it in the store."""
        if self._shared is None:
            if self.rank == 0:
                base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
                path = tempfile.mkdtemp(prefix="systole-job-", dir=base)
                self._store.set("shared", path)
                self._store.add("shared/n", 1)
            else:
                self._wait(name, sequence, ranks=[0], arrived=lambda rank: self._count("shared/n"))
                path = self._store.get("shared").decode()
                if not os.path.isdir(path):
                    raise CollectiveError(f"systole.torch: {name} (collective #{sequence}) on replica {self.rank}: "
                                          f"replica 0's shared memory {path} is not on this machine; a job's "
                                          "replicas must run on one machine")
            self._shared = path
        return self._shared

    def _slot(self, name, rank, sequence, nbytes):
        """`nbytes` of replica `rank`'s slot for collective `sequence`,
        mapped (this replica's own created or grown first: only it writes
        it)."""
        path = os.path.join(self._shared_directory(name, sequence), f"{rank}.{sequence % 2}")
        mapping = self._mapped.get(path)
        if mapping is None or mapping.numel() < nbytes:
            size = max(nbytes, 1)  # nothing maps an empty file
            if rank == self.rank:
                with open(path, "ab") as file:
                    if os.fstat(file.fileno()).st_size < size:
                        file.truncate(size)
            mapping = torch.from_numpy(np.memmap(path, dtype=np.uint8, mode="r+", shape=(size,)))
            self._mapped[path] = mapping
        return mapping[:nbytes]

    def close(self):
        """This replica is done with the job's collectives; the last replica
        to close removes the shared memory (xmp.spawn also removes it after
        the job, whoever closed)."""
        self._mapped.clear()
        self._scratch.clear()
        if self._store is None or self.size == 1:
            return
        if self._store.add("closed", 1) == self.size:
            remove_shared(self.store)

    @contextlib.contextmanager
    def collective(self, name):
        """Runs the body's gloo operations as collective `name`, which ends
        once every replica has arrived at it (a broadcast's root too): a
        transport error becomes a CollectiveError naming the replicas that
        did not reach it."""
        sequence = self._arrive()
        try:
            yield
            self._wait(name, sequence)
        except RuntimeError as error:
            if isinstance(error, CollectiveError):
                raise
            time.sleep(0.2)  # a replica that went away says why just before it does
            missing = [r for r in self._others() if not self._has_arrived(r, sequence)]
            if not missing:  # every one came; name the ones that went away since
                missing = [r for r in self._others() if self._whereabouts(r)]
            if not missing:
                raise CollectiveError(f"systole.torch: {name} (collective #{sequence}) on replica {self.rank} "
                                      f"failed: {error}") from error
            raise CollectiveError(self._missing_text(name, sequence, missing)) from error

    # gloo operations on the job's group (within collective()).

    def broadcast(self, tensor, root):
        options = dist.BroadcastOptions()
        options.rootRank = root
        self._group.broadcast([tensor], options).wait()

    def all_gather(self, tensor):
        parts = [torch.empty_like(tensor) for _ in range(self.size)]
        self._group.allgather([parts], [tensor.contiguous()]).wait()
        return parts


_SINGLE = Job(0, 1)
_current = _SINGLE


def remove_shared(store):
    """Removes the shared memory of the job on `store`, if it made any."""
    store = dist.PrefixStore("systole/", store)
    if store.add("shared/n", 0):
        shutil.rmtree(store.get("shared").decode(), ignore_errors=True)


def keep_freed_memory():
    """Makes this replica's process keep the memory it frees for reuse.
    glibc gives a freed block above its mmap threshold back to the system
    at once, and trims the heap's free top: a training step allocates and
    frees the same tensors of a few MB every step (products, gradients,
    the optimizer's temporaries), and each fresh page costs a fault. Blocks
    up to 32 MB then come from the heap, and up to 64 MB of free top stays
    (the guide's MLP at 2 processes: 17.2 -> 15.0 ms a step). Left alone
    where GLIBC_TUNABLES sets malloc's own, or the C library is not glibc."""
    if "glibc.malloc" in os.environ.get("GLIBC_TUNABLES", ""):
        return
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt is not None:
        M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's <malloc.h>
        mallopt(M_MMAP_THRESHOLD, 32 << 20)
        mallopt(M_TRIM_THRESHOLD, 64 << 20)


def current():
    """The job this process belongs to (one replica alone outside one)."""
    return _current


def set_current(job):
    global _current
    _current = job if job is not None else _SINGLE


def open_store(port, size):
    """A client of the job's store, which the launching process serves on
    127.0.0.1:port."""
    return dist.TCPStore("127.0.0.1", port, size + 1, False, datetime.timedelta(seconds=timeout()))


def serve_store(size):
    """The job's store, served by the launching process for `size` replicas."""
    return dist.TCPStore("127.0.0.1", 0, size + 1, True, datetime.timedelta(seconds=timeout()),
                         wait_for_workers=False)


def join(rank, size, store):
    """Makes this process replica `rank` of a job of `size` on `store`: its
    own gloo group (under the store's prefix systole-group/)."""
    wait = datetime.timedelta(seconds=timeout())
    group = dist.ProcessGroupGloo(dist.PrefixStore("systole-group/", store), rank, size, wait)
    job = Job(rank, size, store, group)
    set_current(job)
    return job


def join_group(group, store, rank, size):
    """Makes this process replica `rank` of a job on an existing gloo
    `group` and its `store` (Lightning's default process group)."""
    job = Job(rank, size, store, group)
    set_current(job)
    return job
