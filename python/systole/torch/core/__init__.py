# SPDX-License-Identifier: Apache-2.0
"""torch_xla.core's place in systole.torch."""
