# SPDX-License-Identifier: Apache-2.0
"""torch_xla.amp: mixed precision. On the array every product already takes
bf16 operands and accumulates in fp32, which is what autocast to bf16 asks
of a TPU's matrix unit; everything else stays float32. So autocast changes
nothing here, and bf16 needs no gradient scaling (torch_xla says the same of
TPUs)."""

import contextlib


@contextlib.contextmanager
def autocast(device=None, enabled=True, dtype=None, cache_enabled=True):
    """torch_xla.amp.autocast: the array's products are bf16 already; the
    rest of the model stays float32."""
    yield


class GradScaler:
    """torch_xla.amp.GradScaler for fp16: bf16 products need no scaling, so
    scale() returns the loss as it is and step() is optimizer.step()."""

    def __init__(self, *args, **kwargs):
        pass

    def scale(self, outputs):
        return outputs

    def unscale_(self, optimizer):
        pass

    def step(self, optimizer, *args, **kwargs):
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale=None):
        pass
