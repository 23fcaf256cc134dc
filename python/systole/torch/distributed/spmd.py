# SPDX-License-Identifier: Apache-2.0
"""torch_xla.distributed.spmd: not available on the array."""

raise ImportError("torch_xla.distributed.spmd is not supported by systole.torch: the array is data-parallel, one "
                  "replica per process, gradients averaged by xm.optimizer_step; use torch_xla.launch and "
                  "xm.optimizer_step instead of sharding")
