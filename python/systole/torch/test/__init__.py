# SPDX-License-Identifier: Apache-2.0
"""torch_xla.test's place in systole.torch."""
