# SPDX-License-Identifier: Apache-2.0
"""torch_xla names that mean nothing on a data-parallel array, each with
what to use instead: a module's __getattr__ raises NotImplementedError for
them, saying so, rather than an AttributeError that looks like a typo."""


def getattr_for(module, names):
    """A module-level __getattr__ for `module` (its torch_xla name, e.g.
    "torch_xla.core.xla_model") that knows the names in `names` (name ->
    why, and what to use instead)."""

    def __getattr__(name):
        if name in names:
            raise NotImplementedError(f"{module}.{name} is not supported by systole.torch: {names[name]}")
        raise AttributeError(f"module {module!r} (systole.torch) has no attribute {name!r}")

    return __getattr__


EAGER = "systole.torch runs every operation when it is called; there is no graph to compile or trace"
SPMD = "the array is data-parallel: one replica per process, gradients averaged by xm.optimizer_step"
