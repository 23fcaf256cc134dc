# SPDX-License-Identifier: Apache-2.0
"""torch_xla.distributed's place in systole.torch."""
