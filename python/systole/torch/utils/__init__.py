# SPDX-License-Identifier: Apache-2.0
"""torch_xla.utils's place in systole.torch."""
