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
"""

import contextlib
import datetime
import os
import pickle
import time

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
        self._forgotten = 0  # this replica's store keys up to this collective are deleted
        self.timeout = timeout() if size > 1 else None
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

    def _arrive(self):
        self._sequence += 1
        self._store.add(f"at/{self._sequence}/{self.rank}", 1)
        return self._sequence

    def _all_have_arrived(self, sequence):
        """Every replica has reached collective `sequence`, so none reads
        this replica's keys of the collectives before it: they go, and the
        store stays the size of a few collectives however long the job."""
        for old in range(self._forgotten + 1, sequence):
            for key in (f"at/{old}/{self.rank}", f"rdv/{old}/{self.rank}", f"rdv/{old}/{self.rank}/n"):
                self._store.delete_key(key)
        self._forgotten = max(self._forgotten, sequence - 1)

    def _wait(self, name, sequence, keys, tolerate_returned):
        """Waits until every replica's key of `keys` (rank -> key) is in the
        store. Returns the replicas that returned instead of coming, if
        `tolerate_returned`; raises CollectiveError when one failed, or
        returned while not tolerated, or when the time is up."""
        start = time.monotonic()
        pause = 0.0005
        waiting = dict(keys)
        gone = []
        while waiting:
            for rank, key in list(waiting.items()):
                if self._count(key):
                    del waiting[rank]
                    continue
                where = self._whereabouts(rank)
                if where is not None and (tolerate_returned and where.startswith("returned")):
                    gone.append(rank)
                    del waiting[rank]
                elif where is not None:
                    raise CollectiveError(self._missing_text(name, sequence, [rank]))
            if not waiting:
                break
            waited = time.monotonic() - start
            if waited > self.timeout:
                raise CollectiveError(self._missing_text(name, sequence, sorted(waiting), waited))
            time.sleep(pause)
            pause = min(pause * 2, 0.05)
        return sorted(gone)

    def rendezvous(self, name, payload=b"", tolerate_returned=False):
        """Every replica's `payload` (bytes), in replica order, once all have
        come to this rendezvous under the same `name`; with
        `tolerate_returned`, the replicas that had returned instead are
        left out (None in their place)."""
        if self.size == 1:
            return [payload]
        sequence = self._arrive()
        base = f"rdv/{sequence}"
        self._store.set(f"{base}/{self.rank}", pickle.dumps((name, payload)))
        self._store.add(f"{base}/{self.rank}/n", 1)
        keys = {r: f"{base}/{r}/n" for r in range(self.size) if r != self.rank}
        gone = self._wait(name, sequence, keys, tolerate_returned)
        if not gone:
            self._all_have_arrived(sequence)
        payloads = []
        for rank in range(self.size):
            if rank in gone:
                payloads.append(None)
                continue
            theirs, data = pickle.loads(self._store.get(f"{base}/{rank}"))
            if theirs != name:
                raise CollectiveError(f"systole.torch: collective #{sequence}: replica {self.rank} is at {name!r} "
                                      f"where replica {rank} is at {theirs!r}: every replica must call the same "
                                      "collectives in the same order")
            payloads.append(data)
        return payloads

    @contextlib.contextmanager
    def collective(self, name, everyone_sends=True):
        """Runs the body's gloo operations as collective `name`: a transport
        error becomes a CollectiveError naming the replicas that did not
        reach it. `everyone_sends`: the body completes only once every
        replica has joined in (not so a broadcast's root)."""
        sequence = self._arrive()
        try:
            yield
            if everyone_sends:
                self._all_have_arrived(sequence)
        except RuntimeError as error:
            if isinstance(error, CollectiveError):
                raise
            time.sleep(0.2)  # a replica that went away says why just before it does
            missing = [r for r in range(self.size) if r != self.rank and not self._count(f"at/{sequence}/{r}")]
            if not missing:  # every one came; name the ones that went away since
                missing = [r for r in range(self.size) if r != self.rank and self._whereabouts(r)]
            if not missing:
                raise CollectiveError(f"systole.torch: {name} (collective #{sequence}) on replica {self.rank} "
                                      f"failed: {error}") from error
            raise CollectiveError(self._missing_text(name, sequence, missing)) from error

    # gloo operations on the job's group (within collective()).

    def send(self, tensor, rank):
        return self._group.send([tensor], rank, 0)

    def recv(self, tensor, rank):
        self._group.recv([tensor], rank, 0).wait()

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
