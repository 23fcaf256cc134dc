# SPDX-License-Identifier: Apache-2.0
"""torch_xla.distributed.xla_multiprocessing's names (import ... as xmp)."""

from systole.torch.replicas import spawn  # noqa: F401
