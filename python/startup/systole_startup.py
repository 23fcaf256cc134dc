# SPDX-License-Identifier: Apache-2.0
"""Mends, at interpreter start, one module of Debian's torch 1.13 that
Python 3.11 refuses to import.

torch/distributed/_shard/sharded_tensor/metadata.py gives a dataclass field
the default TensorProperties(), an instance of another dataclass. Python
3.11's dataclasses refuse an unhashable default ("mutable default ... use
default_factory"), so importing torch.distributed._shard raises ValueError.
Lightning imports it on torch < 2.1 whenever a LightningModule is made.
torch 2.0 changed the field to default_factory=TensorProperties; this does
the same to the module's source as it is imported (Debian's file is not
touched). It does nothing where the line is not there (any other torch) or
where Python accepts it.

.venv's systole-startup.pth imports this module; the systole package
imports it too, for interpreters started without that file.
"""

import importlib.abc
import importlib.util
import importlib.machinery
import sys

_MODULE = "torch.distributed._shard.sharded_tensor.metadata"
_REFUSED = "field(default=TensorProperties())"
_ACCEPTED = "field(default_factory=TensorProperties)"


class _MendedLoader(importlib.machinery.SourceFileLoader):
    """Loads the module from its own file with the one field changed."""

    def get_code(self, fullname):
        source = self.get_data(self.path).decode("utf-8")
        return compile(source.replace(_REFUSED, _ACCEPTED), self.path, "exec", dont_inherit=True)


class _Finder(importlib.abc.MetaPathFinder):

    def find_spec(self, fullname, path, target=None):
        if fullname != _MODULE:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or not isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            return spec
        with open(spec.origin, encoding="utf-8") as f:
            if _REFUSED not in f.read():
                return spec
        return importlib.util.spec_from_file_location(fullname, spec.origin,
                                                      loader=_MendedLoader(fullname, spec.origin))


def install():
    """Puts the finder first on sys.meta_path (once)."""
    if sys.version_info >= (3, 11) and not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


install()
