# SPDX-License-Identifier: Apache-2.0
"""torch_xla.runtime (from torch_xla import runtime as xr): the job's
replicas and the device behind them. Each replica has one device, and
every replica runs on this machine, so global and local counts agree."""

from systole.torch import _job, _unsupported

__getattr__ = _unsupported.getattr_for("torch_xla.runtime", {
    "use_spmd": _unsupported.SPMD,
    "initialize_cache": "there is no compilation cache: " + _unsupported.EAGER,
    "set_device_type": "the device is the array (SYSTOLE); systole.torch.configure chooses its backend",
})


def device_type():
    """The hardware behind the job's devices: "SYSTOLE"."""
    return "SYSTOLE"


def using_pjrt():
    """torch_xla's runtime question; systole.torch behaves as PJRT does
    (one process per device, launched by torch_xla.launch)."""
    return True


def is_spmd():
    """False: the array is data-parallel, never SPMD."""
    return False


def world_size():
    """The replicas in the job (1 outside one)."""
    return _job.current().size


def global_ordinal():
    """This replica's index in the job, from 0."""
    return _job.current().rank


def local_device_count():
    """Devices per process: one."""
    return 1


# One process per replica, one device each, every one on this machine: the
# local and global counts and indices are the same numbers.
local_ordinal = process_index = global_ordinal
process_count = local_process_count = global_device_count = global_runtime_device_count = world_size
addressable_device_count = addressable_runtime_device_count = local_device_count


def global_runtime_device_attributes():
    """One dict per device of the job, as torch_xla gives them."""
    from systole.torch import array_ops
    info = array_ops.array_device().info
    return [{"name": f"SYSTOLE:{r}", "backend": info.get("backend"), "array": info.get("array")}
            for r in range(_job.current().size)]
