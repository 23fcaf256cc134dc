# SPDX-License-Identifier: Apache-2.0
"""torch_xla.distributed.parallel_loader's names (import ... as pl)."""

from systole.torch.replicas import MpDeviceLoader, ParallelLoader  # noqa: F401
