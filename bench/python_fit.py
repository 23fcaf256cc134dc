# SPDX-License-Identifier: Apache-2.0
"""bench/run python: the library's fit from Python (systole.Model) on a
config's own data, to compare with accel_train on the same config.
Usage: python_fit.py CONFIG EPOCHS DEVICES. Prints samples_per_s (the
training steps' examples over their time, as accel_train's throughput line
counts them) and test_accuracy."""

import sys

import systole

config, epochs, devices = sys.argv[1], int(sys.argv[2]), sys.argv[3]
model = systole.Model(config, {"devices": devices})
history = model.fit(epochs=epochs, verbose=0)
print(f"epochs {len(history.epoch)}: loss {history.history['loss'][-1]:.4f}")
print(f"samples_per_s {history.examples / history.seconds:.1f}")
print(f"test_accuracy {model.evaluate()['accuracy']:.4f}")
