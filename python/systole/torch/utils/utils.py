# SPDX-License-Identifier: Apache-2.0
"""torch_xla.utils.utils (import ... as xu): the helpers torch_xla's
training scripts use."""

import os


class SampleGenerator:
    """An iterable that gives the same `data` (e.g. a batch of fake images
    and labels) `sample_count` times: a data loader for smoke tests."""

    def __init__(self, data, sample_count):
        self._data = data
        self._count = sample_count

    def __len__(self):
        return self._count

    def __iter__(self):
        for _ in range(self._count):
            yield self._data


def getenv_as(name, type, defval=None):
    """Environment variable `name` converted by `type` (bool takes 1/0,
    true/false, yes/no), or `defval` where it is not set."""
    value = os.environ.get(name)
    if value is None:
        return defval
    if type is bool:
        text = value.strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off", ""):
            return False
        raise ValueError(f"getenv_as: {name}={value!r} is not a boolean (1/0, true/false, yes/no)")
    try:
        return type(value)
    except ValueError as error:
        raise ValueError(f"getenv_as: {name}={value!r} is not a {type.__name__}: {error}") from None
