# SPDX-License-Identifier: Apache-2.0
"""torch_xla.debug's place in systole.torch."""
