# SPDX-License-Identifier: Apache-2.0
"""Keras fit of Fashion-MNIST's MLP (configs/fashion_mnist.yaml's: 784-256-
128-10, ReLU, Adam 0.001, batch 128) on one TensorFlow device, for
bench/run tensorflow: `tensorflow_fit.py DEVICE EPOCHS` with DEVICE a
TensorFlow device name (SYSTOLE:0 through the PluggableDevice, CPU:0 for
TensorFlow's own kernels). Epoch 1 carries the tracing; the rate is that
of the epochs after it. Prints `samples_per_s`, `test_accuracy` and the
device the first layer's products ran on."""

import gzip
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

DATA = "/usr/share/datasets/fashion-mnist"


def read(prefix):
    with gzip.open(os.path.join(DATA, f"{prefix}-images-idx3-ubyte.gz")) as f:
        x = np.frombuffer(f.read(), dtype=np.uint8, offset=16).reshape(-1, 784)
    with gzip.open(os.path.join(DATA, f"{prefix}-labels-idx1-ubyte.gz")) as f:
        y = np.frombuffer(f.read(), dtype=np.uint8, offset=8)
    return x.astype(np.float32) / 255.0, y.astype(np.int32)


class EpochTimes(keras.callbacks.Callback):
    def on_train_begin(self, logs=None):
        self.seconds = []

    def on_epoch_begin(self, epoch, logs=None):
        self.began = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.seconds.append(time.perf_counter() - self.began)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: tensorflow_fit.py DEVICE EPOCHS")
    device, epochs = sys.argv[1], int(sys.argv[2])
    if epochs < 2:
        sys.exit("tensorflow_fit.py: EPOCHS must be at least 2 (the first traces)")
    x, y = read("train")
    x_test, y_test = read("t10k")
    keras.utils.set_random_seed(1)
    with tf.device(f"/device:{device}"):
        model = keras.Sequential([
            keras.Input((784,)),
            keras.layers.Dense(256, activation="relu"),
            keras.layers.Dense(128, activation="relu"),
            keras.layers.Dense(10),
        ])
        model.compile(optimizer=keras.optimizers.Adam(0.001),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"], jit_compile=False)
        times = EpochTimes()
        model.fit(x, y, batch_size=128, epochs=epochs, verbose=0, callbacks=[times], shuffle=True)
        _, accuracy = model.evaluate(x_test, y_test, batch_size=1000, verbose=0)
        where = model.layers[0](x[:1]).device
    steps = len(x) // 128 + (len(x) % 128 > 0)
    print(f"device {where}")
    print(f"samples_per_s {steps * 128 * (epochs - 1) / sum(times.seconds[1:]):.0f}")
    print(f"test_accuracy {accuracy:.4f}")


if __name__ == "__main__":
    main()
