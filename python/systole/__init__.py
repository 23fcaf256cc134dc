# SPDX-License-Identifier: Apache-2.0
"""Systole from Python: the simulated bf16 systolic array and its trainer.

    import numpy as np, systole
    c = systole.matmul(a, b)                      # on the default device
    dev = systole.Device("sw_emu", array=(128, 128), units=2)
    c = dev.matmul(a, b.T, bias=bias, relu=True)  # any backend
    w = dev.tensor(b)                             # kept in the unit's memory
    y = dev.matmul(a, w, out=dev.tensor(shape=(len(a), b.shape[1])))  # left there

    model = systole.Model("configs/fashion_mnist.yaml")   # or a dict of the same keys
    history = model.fit(x, y, epochs=3, callbacks=[MyCallback()])
    model.evaluate(x_test, y_test)

PyTorch models run on the array through systole.torch (torch_xla's names).
"""

import json
import os
import sys
import threading


def _load_extension():
    """Imports the extension so that its libraries' symbols bind to the
    libraries it was linked with (RTLD_DEEPBIND) rather than to a copy of
    the same names loaded earlier into the process: TensorFlow's
    libtensorflow_framework exports its own protobuf, with which the
    extension's tf.train.Example parsing would crash."""
    flags = sys.getdlopenflags()
    sys.setdlopenflags(flags | os.RTLD_DEEPBIND)
    try:
        import systole._systole  # noqa: F401
    finally:
        sys.setdlopenflags(flags)


_load_extension()
from systole._systole import (DataLossError, Device, DeviceError, DeviceTensor, __version__, backends,  # noqa: E402
                              load_safetensors, save_safetensors, sum_rows)
from systole._systole import _Model, _RecordDataset  # noqa: E402

__all__ = [
    "Callback", "DataLossError", "Device", "DeviceError", "DeviceTensor", "History", "Model", "RecordDataset", "__version__",
    "backends",
    "default_device", "load_safetensors", "matmul", "save_safetensors", "set_default_device", "sum_rows",
]

_default_lock = threading.Lock()
_default = None


def default_device():
    """The device systole.matmul uses without one: sw_emu, one 128x128 unit,
    opened on first use (set_default_device replaces it)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Device("sw_emu")
        return _default


def set_default_device(device):
    """Makes `device` (a systole.Device) the one systole.matmul uses."""
    global _default
    if not isinstance(device, Device):
        raise TypeError(f"set_default_device: expected a systole.Device, got {type(device).__name__}")
    with _default_lock:
        _default = device


def matmul(a, b, bias=None, relu=False, transpose_a=False, transpose_b=False, *, device=None, unit=0):
    """op(a) @ op(b) (+ bias) (ReLU) on the array: float32 operands rounded to
    bf16, products accumulated in fp32 in the array's order. Returns a new
    float32 array. See Device.matmul."""
    return (device or default_device()).matmul(a, b, bias, relu, transpose_a, transpose_b, unit=unit)


class Callback:
    """Keras' callback: override the hooks you need. `model` is the
    systole.Model being trained and `params` what fit was asked to do; set
    `self.model.stop_training = True` to stop fit after the epoch."""

    def __init__(self):
        self.model = None
        self.params = {}

    def set_model(self, model):
        self.model = model

    def set_params(self, params):
        self.params = params


class History:
    """What fit returns: `history` maps each log ("loss", "val_accuracy", ...)
    to its value per epoch; `epoch` lists the epochs run."""

    def __init__(self, result):
        self.epoch = list(result["epoch"])
        self.history = {name: list(values) for name, values in result["history"].items()}
        self.steps = result["steps"]
        self.examples = result["examples"]
        self.seconds = result["seconds"]
        self.stopped_early = result["stopped_early"]

    def __repr__(self):
        return f"History(epochs={len(self.epoch)}, logs={sorted(self.history)})"


def _config_source(config, overrides, what):
    """(text, source, is_file, overrides) for the C++ config reader: a YAML
    file's path or a dict, and a dict of keys to set on top. A dict goes as
    JSON: JSON is YAML, so the schema reads it as it reads a file, and its
    errors name the keys."""
    if config is None:
        config = {}
    if overrides is not None and not isinstance(overrides, dict):
        raise TypeError(f"{what}: overrides must be a dict, got {type(overrides).__name__}")
    extra = json.dumps(overrides) if overrides else ""
    if isinstance(config, (str, os.PathLike)):
        return os.fspath(config), "", True, extra
    if isinstance(config, dict):
        return json.dumps(config), "config", False, extra
    raise TypeError(f"{what}: expected a config dict or a YAML file's path, got {type(config).__name__}")


class RecordDataset:
    """The config's training data as batches of NumPy arrays (x, y): TFRecord
    files through the input pipelines (data.format: tfrecord), or the IDX
    training split; global batches, shuffled per epoch with the config's
    seed. Each iteration is the next epoch. They are the batches
    model.fit(dataset) trains on, for the replicas the config's devices
    select: with TFRecord files each replica reads its shard through its own
    pipeline (and its share of the shuffle buffer), and a batch is theirs in
    replica order."""

    def __init__(self, config, overrides=None):
        self._data = _RecordDataset(*_config_source(config, overrides, "RecordDataset"))
        self._epoch = 0

    def __len__(self):
        return self._data.batches

    def __iter__(self):
        self._data.start(self._epoch)
        self._epoch += 1
        while True:
            batch = self._data.next()
            if batch is None:
                return
            yield batch


class Model:
    """A model described by accel_train's config schema (docs/config.md),
    trained by the library's fit: the same layers, optimizers, callbacks and
    checkpoints as accel_train, on the device the config names.

    config: a path to a YAML file, or a dict with the same keys
    ({"model": {"layers": [...]}, "train": {"epochs": 3}, ...});
    overrides: a dict of keys set on top of it ({"devices": 2}).
    The model is built on the first fit, evaluate or predict, for the
    shape of the data it is given.
    """

    def __init__(self, config=None, overrides=None):
        self._model = _Model(*_config_source(config, overrides, "Model"))
        self.stop_training = False

    def _attach(self, callbacks, params):
        callbacks = list(callbacks or [])
        for callback in callbacks:
            if hasattr(callback, "set_model"):
                callback.set_model(self)
            if hasattr(callback, "set_params"):
                callback.set_params(dict(params))
        return callbacks

    def fit(self, x=None, y=None, *, epochs=None, initial_epoch=0, steps_per_epoch=None,
            validation_data=None, callbacks=None, verbose=1):
        """Trains on x, y (NumPy arrays: float32 examples, integer class
        indices), on a RecordDataset, or, without them, on the config's data
        (an IDX directory, or TFRecord files through the input pipeline).
        Returns a History."""
        for name, value in (("epochs", epochs), ("initial_epoch", initial_epoch), ("steps_per_epoch", steps_per_epoch)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0 or value >= 2**32):
                raise ValueError(f"fit: {name} must be a whole number in [0, 2^32), got {value!r}")
        if epochs == 0:
            raise ValueError("fit: epochs must be at least 1, got 0")
        self.stop_training = False
        callbacks = self._attach(callbacks, {"epochs": epochs, "steps": steps_per_epoch, "verbose": verbose})
        if isinstance(x, RecordDataset):
            x = x._data
        result = self._model.fit(self, x, y, epochs or 0, initial_epoch, steps_per_epoch or 0,
                                 validation_data, callbacks, int(verbose))
        return History(result)

    def evaluate(self, x=None, y=None, *, callbacks=None):
        """The loss and metrics over x, y, or over the config's test set, as a
        dict ({"loss": ..., "accuracy": ...})."""
        return self._model.evaluate(self, x, y, self._attach(callbacks, {}))

    def predict(self, x):
        """The model's outputs (logits) for float32 examples x."""
        return self._model.predict(x)

    def get_weights(self):
        """The weights by name (torch's state_dict names), as NumPy copies."""
        return self._model.weights()

    def save_weights(self, path):
        """Writes the weights as a safetensors file (torch.load-able through
        safetensors; accel_train evaluate --weights reads it)."""
        self._model.save(os.fspath(path))

    def load_weights(self, path):
        """Reads weights written by save_weights or accel_train."""
        self._model.load_weights(os.fspath(path))

    @property
    def built(self):
        return self._model.built

    @property
    def replicas(self):
        """The replicas trained in sync (compute units), once built."""
        return self._model.replicas

    def summary(self):
        return self._model.summary()

    def config_yaml(self):
        """The full config, defaults included, as YAML."""
        return self._model.config_yaml()
