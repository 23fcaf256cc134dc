#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The PyTorch peer of accel_train for any model it trains: the model as
accel_train prints it (its `torch:` line, torch.nn code), Glorot-uniform
weights and zero biases (Keras' defaults, as accel_train draws them), the
same 55,000-example training split, batch, Adam and epochs or steps, on the
CPU in float32. Timed over the training steps only. Prints `samples_per_s`
and `test_accuracy` lines for bench/run.

Usage: train_pytorch_model.py DATA_DIR TORCH_CODE EPOCHS STEPS_PER_EPOCH GLOBAL_BATCH THREADS
       (STEPS_PER_EPOCH 0: every full batch)
"""
import gzip
import sys
import time

import numpy as np
import torch


def read_idx(path, dimensions):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic = int.from_bytes(data[0:4], "big")
    assert magic == 0x800 | dimensions, f"{path}: bad magic {magic:#x}"
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dimensions)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * dimensions).reshape(shape)


def load(directory, prefix, images_shape):
    images = read_idx(f"{directory}/{prefix}-images-idx3-ubyte.gz", 3)
    labels = read_idx(f"{directory}/{prefix}-labels-idx1-ubyte.gz", 1)
    x = torch.from_numpy(images.reshape((len(images),) + images_shape).astype(np.float32) / 255.0)
    return x, torch.from_numpy(labels.astype(np.int64))


def main():
    directory, code = sys.argv[1], sys.argv[2]
    epochs, steps_per_epoch, batch, threads = (int(a) for a in sys.argv[3:7])
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    model = eval(code, {"torch": torch})
    for module in model.modules():
        if isinstance(module, (torch.nn.Linear, torch.nn.Conv2d)):
            torch.nn.init.xavier_uniform_(module.weight)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
    # Convolutional models take N x 1 x H x W, dense ones N x 784.
    convolutional = any(isinstance(m, torch.nn.Conv2d) for m in model.modules())
    shape = (1, 28, 28) if convolutional else (784,)
    x, y = load(directory, "train", shape)
    x_train, y_train = x[:55000], y[:55000]  # accel_train holds out the last 5000
    x_test, y_test = load(directory, "t10k", shape)

    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-7)
    loss_fn = torch.nn.CrossEntropyLoss()
    generator = torch.Generator().manual_seed(1)
    seconds, samples = 0.0, 0
    for _ in range(epochs):
        model.train()
        order = torch.randperm(len(x_train), generator=generator)
        steps = len(order) // batch  # drop the remainder, as accel_train
        if steps_per_epoch:
            steps = min(steps, steps_per_epoch)
        start = time.perf_counter()
        for s in range(steps):
            index = order[s * batch:(s + 1) * batch]
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(x_train[index]), y_train[index])
            loss.backward()
            optimizer.step()
        seconds += time.perf_counter() - start
        samples += steps * batch
    model.eval()
    with torch.no_grad():
        correct = sum((model(x_test[i:i + 1000]).argmax(1) == y_test[i:i + 1000]).sum().item()
                      for i in range(0, len(x_test), 1000))
    print(f"samples_per_s {samples / seconds:.1f}")
    print(f"test_accuracy {correct / len(x_test):.4f}")


if __name__ == "__main__":
    main()
