# SPDX-License-Identifier: Apache-2.0
"""torch_xla.core.xla_model's names (import systole.torch.core.xla_model as xm)."""

from systole.torch.replicas import (  # noqa: F401
    all_gather, get_ordinal, is_master_ordinal, mark_step, optimizer_step, reduce_gradients, rendezvous, save,
    world_size, xla_device, xrt_world_size,
)
